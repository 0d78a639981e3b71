// Each request counted in the metrics (duration by route, method and status), and, with tracing on,
// a server span around it whose context the handler and everything it starts run in.
// Callback hooks, not async ones: they run on every request, and an async hook costs a promise and
// a microtask turn each.
import fp from 'fastify-plugin'

export const requestTelemetry = fp(async function requestTelemetry (app, { metrics, tracing }) {
  if (tracing) {
    app.addHook('onRequest', (request, reply, done) => { tracing.startRequest(request, reply); done() })
    app.addHook('preHandler', (request, reply, done) => tracing.inRequest(request, done))
  }
  app.addHook('onResponse', (request, reply, done) => {
    const sampled = tracing?.endRequest(request, reply.statusCode)
    const route = request.routeOptions.url ?? 'unmatched'
    metrics.requestAnswered(request.method, route, reply.statusCode, reply.elapsedTime / 1000, sampled)
    done()
  })
}, { name: 'request-telemetry' })
