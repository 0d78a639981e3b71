{{/*
Where the service finds PostgreSQL and Redis: the bundled Bitnami releases or the external ones
(global.externalDatabase, global.externalRedis), their Secrets, and the database CA's volume.
*/}}
{{/*
Bitnami's name of a bundled dependency: `<release>-<chart>`, or the release name when it contains
the chart's name (common.names.dependency.fullname without overrides).
*/}}
{{- define "service.dependencyFullname" -}}
{{- if contains .chart .context.Release.Name -}}
{{- .context.Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .context.Release.Name .chart | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
Which PostgreSQL (global.database): `cloudnative-pg`, `external`, `bundled`; empty: external when
global.externalDatabase.host is set, else bundled.
*/}}
{{- define "service.databaseKind" -}}
{{- $kind := .Values.global.database | default "" -}}
{{- if $kind -}}{{ $kind }}{{- else if (dig "externalDatabase" "host" "" (.Values.global | merge dict)) -}}external{{- else -}}bundled{{- end -}}
{{- end -}}

{{/* The CloudNativePG Cluster of global.database=cloudnative-pg: `<release>-postgresql` (dots as dashes). */}}
{{- define "service.cloudnativePgName" -}}
{{- printf "%s-postgresql" (.Release.Name | replace "." "-") | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{/*
PostgreSQL: the external one (global.externalDatabase); a CloudNativePG Cluster the umbrella makes
(its `-rw` Service, which follows the primary, and the Secret `<cluster>-app` the operator makes for
the owner global.postgresql.auth.username); else the bundled Bitnami chart (service and Secret
`<release>-postgresql`, user and database from Bitnami's global.postgresql.auth; the Bitnami chart's
own globals come along empty, hence `default` rather than dig's fallback).
Result: a dict with host, port, user, database, options, secret, key (secret empty: no password),
ca, caKey (ca empty: no CA mounted), external, cloudnativePg. With a CA the options get
sslmode=verify-full and sslrootcert.
*/}}
{{- define "service.database" -}}
{{- $ext := .Values.global.externalDatabase | default dict -}}
{{- $kind := include "service.databaseKind" . -}}
{{- if eq $kind "cloudnative-pg" -}}
{{- $auth := dig "postgresql" "auth" dict (.Values.global | merge dict) -}}
{{- $name := include "service.cloudnativePgName" . -}}
{{- dict "host" (printf "%s-rw" $name) "port" 5432 "user" ($auth.username | default "suite") "database" ($auth.database | default "suite") "options" "" "secret" (printf "%s-app" $name) "key" "password" "ca" "" "external" false "cloudnativePg" $name | toJson -}}
{{- else if eq $kind "external" -}}
{{- $options := $ext.options | default "" -}}
{{- if $ext.caSecret -}}
{{- /* values.schema.json refuses an sslmode or sslrootcert of the user's own beside a caSecret */ -}}
{{- $options = printf "sslmode=verify-full&sslrootcert=%s/ca.crt%s" (include "service.databaseCaDir" .) (ternary (printf "&%s" $options) "" (ne $options "")) -}}
{{- end -}}
{{- dict "host" $ext.host "port" $ext.port "user" $ext.user "database" $ext.database "options" $options "secret" ($ext.existingSecret | default "") "key" $ext.existingSecretPasswordKey "ca" ($ext.caSecret | default "") "caKey" ($ext.caSecretKey | default "ca.crt") "external" true "cloudnativePg" "" | toJson -}}
{{- else -}}
{{- $auth := dig "postgresql" "auth" dict (.Values.global | merge dict) -}}
{{- $name := include "service.dependencyFullname" (dict "chart" "postgresql" "context" .) -}}
{{- dict "host" $name "port" 5432 "user" ($auth.username | default "suite") "database" ($auth.database | default "suite") "options" "" "secret" (tpl ($auth.existingSecret | default $name) .) "key" (dig "secretKeys" "userPasswordKey" "" $auth | default "password") "ca" "" "external" false "cloudnativePg" "" | toJson -}}
{{- end -}}
{{- end -}}

{{/* Where the external PostgreSQL's CA certificate is mounted (global.externalDatabase.caSecret). */}}
{{- define "service.databaseCaDir" -}}/etc/suite/postgresql-ca{{- end -}}

{{/* The volume of the CA certificate, for the pod's `volumes:` (nothing without a caSecret). */}}
{{- define "service.databaseCaVolume" -}}
{{- $db := include "service.database" . | fromJson -}}
{{- if $db.ca -}}
- name: postgresql-ca
  secret:
    secretName: {{ $db.ca }}
    defaultMode: 0444
    items:
      - key: {{ $db.caKey }}
        path: ca.crt
{{- end -}}
{{- end -}}

{{/* Its mount, for every container that connects to PostgreSQL (nothing without a caSecret). */}}
{{- define "service.databaseCaMount" -}}
{{- $db := include "service.database" . | fromJson -}}
{{- if $db.ca -}}
- name: postgresql-ca
  mountPath: {{ include "service.databaseCaDir" . }}
  readOnly: true
{{- end -}}
{{- end -}}

{{/*
Redis: the external one when global.externalRedis.host is set, else the bundled Bitnami chart
(service `<release>-redis-master`, Secret `<release>-redis`, key `redis-password`).
*/}}
{{- define "service.redis" -}}
{{- $ext := .Values.global.externalRedis | default dict -}}
{{- if $ext.host -}}
{{- dict "host" $ext.host "port" $ext.port "tls" $ext.tls "secret" ($ext.existingSecret | default "") "key" $ext.existingSecretPasswordKey "external" true | toJson -}}
{{- else -}}
{{- $name := include "service.dependencyFullname" (dict "chart" "redis" "context" .) -}}
{{- dict "host" (printf "%s-master" $name) "port" 6379 "tls" false "secret" $name "key" "redis-password" "external" false | toJson -}}
{{- end -}}
{{- end -}}
