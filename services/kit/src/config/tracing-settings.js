// The tracing settings: OpenTelemetry's own variables (its SDK configuration spec), the ones the kit
// reads, checked with every other setting (config.js) and used by telemetry/tracing.js. The exporter
// also reads OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION and _CERTIFICATE (and their _TRACES_
// forms) as the spec says.
const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio'
]
const PROTOCOLS = ['http/protobuf', 'http/json', 'grpc']
const otlpUrl = { type: 'string', pattern: '^(https?://[^\\s]+)?$' } // empty: unset
export const TRACING_SETTINGS = {
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    ...otlpUrl,
    description: 'traces: the OTLP endpoint (http://collector:4318 for HTTP, :4317 for gRPC); /v1/traces is added ' +
      'for HTTP; unset (and no OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): no tracing work at all'
  },
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: {
    ...otlpUrl,
    description: 'traces: the OTLP traces endpoint as is (wins over OTEL_EXPORTER_OTLP_ENDPOINT)'
  },
  OTEL_EXPORTER_OTLP_PROTOCOL: {
    type: 'string',
    enum: PROTOCOLS,
    default: 'http/protobuf',
    description: 'traces: the OTLP transport'
  },
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: {
    type: 'string',
    enum: PROTOCOLS,
    description: 'traces: the OTLP transport of traces (wins over OTEL_EXPORTER_OTLP_PROTOCOL)'
  },
  OTEL_TRACES_SAMPLER: {
    type: 'string',
    enum: SAMPLERS,
    default: 'parentbased_traceidratio',
    description: 'traces: which requests are traced; parentbased_*: a request that arrives with a traceparent ' +
      'follows its caller\'s decision; a span serving many requests (a shared MGET, a group commit) is kept when ' +
      'any of them is'
  },
  OTEL_TRACES_SAMPLER_ARG: {
    type: 'number',
    minimum: 0,
    maximum: 1,
    default: 0.1,
    description: 'traces: the share of new traces kept by the traceidratio samplers'
  },
  OTEL_TRACES_EXPORTER: {
    type: 'string',
    enum: ['otlp', 'none'],
    default: 'otlp',
    description: 'traces: none turns tracing off whatever the endpoint'
  },
  OTEL_SDK_DISABLED: {
    type: 'boolean',
    default: false,
    description: 'traces: true turns tracing off whatever the endpoint'
  },
  OTEL_SERVICE_NAME: {
    type: 'string',
    minLength: 1,
    description: 'traces: the service.name resource attribute; default: the service\'s name'
  },
  OTEL_RESOURCE_ATTRIBUTES: {
    type: 'string',
    description: 'traces: more resource attributes, key=value,key=value (the charts set the pod, namespace and node)'
  },
  OTEL_BSP_SCHEDULE_DELAY: {
    type: 'integer',
    minimum: 0,
    default: 5000,
    description: 'traces: milliseconds between two exports of finished spans'
  },
  OTEL_BSP_EXPORT_TIMEOUT: {
    type: 'integer',
    minimum: 0,
    default: 30000,
    description: 'traces: the longest an export may take, milliseconds'
  },
  OTEL_BSP_MAX_QUEUE_SIZE: {
    type: 'integer',
    minimum: 1,
    default: 2048,
    description: 'traces: finished spans waiting for export at most, per worker; past it they are dropped, never ' +
      'the request'
  },
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: {
    type: 'integer',
    minimum: 1,
    default: 512,
    description: 'traces: spans per export at most (at most OTEL_BSP_MAX_QUEUE_SIZE)'
  }
}
