// A throwaway Jaeger v2 (the trace backend k8s/ installs in a cluster) on free loopback ports: OTLP in
// over HTTP and gRPC, traces kept in memory, its query API out. Built from its Go module by
// scripts/tools.sh; the tests and the bench send the services' traces to it for real.
import { spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './ports.js'
import { collect, exited } from './processes.js'
import { waitFor } from './wait.js'
import { findBinary } from './tools.js'

/**
 * Returns { otlpHttp, otlpGrpc, queryUrl, trace(id), traces(service), stop() }: otlpHttp and otlpGrpc are
 * OTEL_EXPORTER_OTLP_ENDPOINT values; trace(id) resolves to the trace's spans as OTLP JSON
 * (api/v3), [] when Jaeger has none of it.
 */
export async function startJaeger () {
  const bin = findBinary('jaeger')
  const [http, grpc, query] = [await freePort(), await freePort(), await freePort()]
  const dir = await mkdtemp(join(tmpdir(), 'suite-jaeger-'))
  const config = join(dir, 'config.yaml')
  await writeFile(config, `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: []
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${query}
    grpc:
      endpoint: 127.0.0.1:${await freePort()}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${http}
      grpc:
        endpoint: 127.0.0.1:${grpc}
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`)
  const child = spawn(bin, ['--config', config], { stdio: ['ignore', 'pipe', 'pipe'] })
  const output = collect(child)
  const queryUrl = `http://127.0.0.1:${query}`
  await waitFor('jaeger', async () => {
    if (child.exitCode !== null) throw new Error(`jaeger exited: ${output()}`)
    return (await fetch(`${queryUrl}/api/services`)).ok
  }, { timeoutMs: 60_000 })
  /** The spans of trace `id` (32 hex digits), each with its resource's attributes, or []. */
  async function trace (id) {
    const res = await fetch(`${queryUrl}/api/v3/traces/${id}`)
    if (res.status === 404) return []
    if (!res.ok) throw new Error(`jaeger: GET /api/v3/traces/${id}: ${res.status} ${await res.text()}`)
    return spansOf(await res.json())
  }
  return {
    otlpHttp: `http://127.0.0.1:${http}`,
    otlpGrpc: `http://127.0.0.1:${grpc}`,
    queryUrl,
    trace,
    /** Resolves to trace `id`'s spans once `until(spans)` holds (exports leave every OTEL_BSP_SCHEDULE_DELAY). */
    waitForTrace: (id, until = (spans) => spans.length > 0, timeoutMs = 15_000) =>
      waitFor(`trace ${id} in jaeger`, async () => {
        const spans = await trace(id)
        return until(spans) && spans
      }, { timeoutMs }),
    /**
     * Resolves to the span named `operation` of `service` that links to `span` ({ traceId, spanId }):
     * work that served several requests is a trace of its own, found by its links.
     */
    async waitForLinked (service, operation, span, timeoutMs = 15_000) {
      return waitFor(`a ${operation} span of ${service} linked to ${span.spanId}`, async () => {
        const params = new URLSearchParams({
          'query.service_name': service,
          'query.operation_name': operation,
          'query.start_time_min': new Date(Date.now() - 600_000).toISOString(),
          'query.start_time_max': new Date(Date.now() + 60_000).toISOString(),
          'query.num_traces': '1000'
        })
        const res = await fetch(`${queryUrl}/api/v3/traces?${params}`)
        if (!res.ok) return false
        const linked = (s) => s.links.some((l) => l.spanId === span.spanId && l.traceId === span.traceId)
        const found = spansOf(await res.json()).find((s) => s.name === operation && linked(s))
        return found ?? false
      }, { timeoutMs })
    },
    /** The services Jaeger has had spans from. */
    services: async () => (await (await fetch(`${queryUrl}/api/services`)).json()).data ?? [],
    output,
    async stop () {
      child.kill('SIGTERM')
      await exited(child)
      await rm(dir, { recursive: true, force: true })
    }
  }
}

// api/v3 answers OTLP JSON ({ result: { resourceSpans } }), ids in hex: each span flattened with its
// attributes (and its resource's) as plain values (an int64 comes as a string there; an array as a list).
function spansOf (body) {
  const valueOf = (v) => ('intValue' in v
    ? Number(v.intValue)
    : 'arrayValue' in v ? (v.arrayValue.values ?? []).map(valueOf) : Object.values(v)[0])
  const attrs = (list = []) => Object.fromEntries(list.map(({ key, value }) => [key, valueOf(value)]))
  const resourceSpans = body.result?.resourceSpans ?? []
  return resourceSpans.flatMap((rs) => (rs.scopeSpans ?? []).flatMap((ss) => (ss.spans ?? []).map((s) => ({
    name: s.name,
    kind: s.kind,
    traceId: s.traceId,
    spanId: s.spanId,
    parentSpanId: s.parentSpanId || undefined,
    links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
    attributes: attrs(s.attributes),
    resource: attrs(rs.resource?.attributes),
    status: s.status
  }))))
}
