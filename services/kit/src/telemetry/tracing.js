// OpenTelemetry traces, configured only by the standard OTEL_* variables (config.js validates them).
// Each instance — a worker thread, or the main thread with one worker; under npm start, each service
// of the launcher — has a tracer provider of its own: every thread has its own module graph, so an SDK
// started on the main thread alone would trace nothing in the workers. Without an OTLP endpoint none is
// made: no context manager, no hook, no span, nothing buffered, and the SDK is not even loaded (only
// the API, which the pg and Redis wrappers ask whether a request is traced).
//
// What a trace holds: a server span per request, named by its route pattern; under it a span for each
// PostgreSQL statement (its prepared statement's name, never a bound value) and each Redis command the
// request makes itself. Work that serves many requests at once — a turn's reads as one MGET, a turn's
// misses as one query, a shared read, flows' group commit — is one span of its own, linked to every
// request it served (span links, not a made-up parent), and kept when any of them is sampled.
//
// The active request is found through AsyncLocalStorage (context.active()), which also carries the
// instance's tracer: the pg and Redis wrappers and a service's own code need nothing passed to them.
import { hostname } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  createContextKey,
  trace
} from '@opentelemetry/api'

// In the context of a traced request: { tracing (the instance's), requestId }; of a linked span: { tracing }.
const TRACED = createContextKey('suite traced')
const SPAN = Symbol('server span')
const CONTEXT = Symbol('request context')
const FLUSH_MS = 3000 // at shutdown, the longest wait for the last spans to leave
const headerGetter = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key]
}

let traced = false // some instance of this thread traces: the wrappers look at the context only then

/** Whether the settings ask for traces: an OTLP endpoint, and neither the SDK nor the exporter turned off. */
export function tracingWanted (config) {
  return Boolean(config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || config.OTEL_EXPORTER_OTLP_ENDPOINT) &&
    !config.OTEL_SDK_DISABLED && config.OTEL_TRACES_EXPORTER !== 'none'
}

/**
 * The tracing of one instance, or null when the settings ask for none.
 * @param {object} config  the validated settings (OTEL_* among them)
 * @param {{ name: string, version?: string }} service
 * @param {number} worker  the instance's worker number
 */
export async function startTracing (config, service, worker) {
  if (!tracingWanted(config)) return null
  const protocol = config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL
  const [
    { AsyncLocalStorageContextManager },
    { W3CTraceContextPropagator },
    { detectResources, envDetector, resourceFromAttributes },
    { BatchSpanProcessor, ParentBasedSampler, SamplingDecision, TracerProvider },
    { OTLPTraceExporter }
  ] = await Promise.all([
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace'),
    // The exporter reads its endpoint, headers, timeout and compression from OTEL_EXPORTER_OTLP_* itself.
    import({
      'http/protobuf': '@opentelemetry/exporter-trace-otlp-proto',
      'http/json': '@opentelemetry/exporter-trace-otlp-http',
      grpc: '@opentelemetry/exporter-trace-otlp-grpc'
    }[protocol])
  ])
  if (!traced) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
    traced = true
  }
  const propagator = new W3CTraceContextPropagator()
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) win over the kit's own attributes.
  const resource = resourceFromAttributes({
    'service.name': service.name,
    'service.version': service.version ?? '0.0.0',
    'service.instance.id': `${hostname()}/${process.pid}/${worker}`
  }).merge(detectResources({ detectors: [envDetector] }))
  const { sampler, traceNew } = samplingOf(config, { ParentBasedSampler, SamplingDecision })
  const provider = new TracerProvider({
    resource,
    sampler,
    spanProcessors: [new BatchSpanProcessor({
      exporter: new OTLPTraceExporter(),
      scheduledDelayMillis: config.OTEL_BSP_SCHEDULE_DELAY,
      exportTimeoutMillis: config.OTEL_BSP_EXPORT_TIMEOUT,
      maxQueueSize: config.OTEL_BSP_MAX_QUEUE_SIZE,
      maxExportBatchSize: config.OTEL_BSP_MAX_EXPORT_BATCH_SIZE
    })]
  })
  const tracer = provider.getTracer('@suite/kit')
  const tracing = {
    tracer,
    /**
     * onRequest: the server span, continuing the trace of the request's `traceparent`/`tracestate`
     * (W3C), which the answer carries back; the request logger gets its trace and span ids.
     */
    startRequest (request, reply) {
      if (request.routeOptions.config?.traced === false) return // probes and scrapes: not the service's traffic
      // Most requests are not traced: decided first, they cost a random number and nothing else —
      // no span, no ids, no context (their garbage cost more than the spans of the traced ones).
      if (!traceNew(request.headers.traceparent)) return
      const parent = propagator.extract(ROOT_CONTEXT, request.headers, headerGetter)
      const route = request.routeOptions.url
      const spanName = route ? `${request.method} ${route}` : request.method
      const span = tracer.startSpan(spanName, { kind: SpanKind.SERVER }, parent)
      if (span.isRecording()) {
        span.setAttributes({
          'http.request.method': request.method,
          'url.path': request.url.split('?', 1)[0],
          'url.scheme': request.protocol,
          'http.response.header.x-request-id': [request.id],
          ...(route && { 'http.route': route })
        })
      }
      const ctx = trace.setSpan(parent, span).setValue(TRACED, { tracing, requestId: request.id })
      request[SPAN] = span
      request[CONTEXT] = ctx
      propagator.inject(ctx, reply, { set: (r, key, value) => r.header(key, value) })
      const { traceId, spanId } = span.spanContext()
      request.log.addBindings?.({ trace_id: traceId, span_id: spanId })
    },
    /** preHandler: the handler runs in the request's context (body parsing runs outside it). */
    inRequest: (request, done) => (request[CONTEXT] ? context.with(request[CONTEXT], done) : done()),
    /**
     * onResponse: the span ends with the answer's status. Returns the sampled span's context (an
     * exemplar of the request's duration), or undefined.
     */
    endRequest (request, status) {
      const span = request[SPAN]
      if (!span?.isRecording()) return undefined
      span.setAttribute('http.response.status_code', status)
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
      span.end()
      return span.spanContext()
    },
    /** A request that failed with an error of the service's (a 500): on its span. */
    failed (request, err) { if (request[SPAN]?.isRecording()) request[SPAN].recordException(err) },
    /** Exports what is left, at most FLUSH_MS, then stops (the kit's drain calls it on SIGTERM). */
    async shutdown () {
      await Promise.race([provider.shutdown().catch(() => {}), sleep(FLUSH_MS)])
    }
  }
  return tracing
}

/**
 * OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, in two parts. traceNew(traceparent): whether a
 * request is traced at all — under a parentbased_* sampler every request that carries a traceparent
 * is (the SDK's sampler then follows the caller's decision, sampled or not), and the others by the
 * sampler's own rule (always, never, or the ratio). The SDK's sampler: what traceNew let through is
 * kept (parent-based: as its parent says), and a span with links (work that served many requests)
 * is kept when one of those requests is.
 */
function samplingOf (config, { ParentBasedSampler, SamplingDecision }) {
  const name = config.OTEL_TRACES_SAMPLER
  const ratio = config.OTEL_TRACES_SAMPLER_ARG
  const rule = name.replace('parentbased_', '')
  const decide = { always_on: () => true, always_off: () => false, traceidratio: () => Math.random() < ratio }[rule]
  const parentBased = name !== rule
  const root = {
    shouldSample (ctx, traceId, spanName, kind, attributes, links) {
      const sampled = !links?.length || links.some((l) => (l.context.traceFlags & TraceFlags.SAMPLED) !== 0)
      return { decision: sampled ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD }
    },
    toString: () => 'TracedOrLinked'
  }
  return {
    traceNew: (traceparent) => (parentBased && traceparent !== undefined) || decide(),
    sampler: parentBased ? new ParentBasedSampler({ root }) : root
  }
}

/** The context to link a batch to: the active request's, when one is traced; else undefined. */
export function requestContext () {
  if (!traced) return undefined
  const ctx = context.active()
  return ctx.getValue(TRACED) ? ctx : undefined
}

const endWith = (span) => [
  (value) => { span.end(); return value },
  (err) => {
    span.recordException(err)
    span.setStatus({ code: SpanStatusCode.ERROR, message: err.message })
    span.end()
    throw err
  }
]

/**
 * Runs `fn()` (a promise) in a client span under the active traced span, named `name`, with
 * `attributes()`; without one (tracing off, no request), just `fn()`.
 */
export function childSpan (name, attributes, fn) {
  const parent = requestContext()
  if (!parent) return fn()
  const span = parent.getValue(TRACED).tracing.tracer.startSpan(name, { kind: SpanKind.CLIENT }, parent)
  if (!span.isRecording()) return fn()
  span.setAttributes(attributes())
  return context.with(trace.setSpan(parent, span), fn).then(...endWith(span))
}

/**
 * Runs `fn()` (a promise) in a span of its own — a new trace — linked to each of `contexts` (the
 * requestContext() of every request it serves), sampled when one of them is; without any traced
 * context, just `fn()`. Spans `fn` makes (its PostgreSQL statements) are its children.
 */
export function linkedSpan (name, contexts, attributes, fn) {
  const traced = contexts.filter(Boolean)
  if (!traced.length) return fn()
  const { tracing } = traced[0].getValue(TRACED)
  const links = traced.map((ctx) => ({ context: trace.getSpanContext(ctx) })).filter((l) => l.context)
  const span = tracing.tracer.startSpan(name, { kind: SpanKind.INTERNAL, links, root: true }, ROOT_CONTEXT)
  if (!span.isRecording()) return fn()
  span.setAttributes({ ...attributes(), 'suite.requests': traced.length })
  return context.with(trace.setSpan(ROOT_CONTEXT, span).setValue(TRACED, { tracing }), fn).then(...endWith(span))
}

/** pino's mixin: a line written inside a traced request carries its ids (the request's own logger has them bound). */
export function logIds () {
  const ctx = requestContext()
  if (!ctx) return {}
  const span = trace.getSpanContext(ctx)
  return { reqId: ctx.getValue(TRACED).requestId, trace_id: span.traceId, span_id: span.spanId }
}
