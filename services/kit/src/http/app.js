// The Fastify application of one instance: the kit's plugins, one concern a file, around a
// service's own routes. The order matters where hooks run in it: the request's id first, then its
// telemetry, then the error contract, which answers an unknown path before a body is read. Unknown
// paths get only the hooks added before the error contract.
import Fastify, { LogController } from 'fastify'
import { validatorCompiler } from './validation.js'
import { lazyRequestLogger } from '../telemetry/logger.js'
import { clientErrorHandler, declaredErrors, errorContract, frameworkErrors } from './errors.js'
import { jsonBody } from './json-body.js'
import { requestId, requestIds } from './request-id.js'
import { requestTelemetry } from './request-telemetry.js'
import { cachedReply } from './cached-reply.js'
import { openapi } from './openapi.js'
import { opsRoutes } from './ops-routes.js'
import { loadShedding } from './load-shedding.js'

/**
 * @param {object} deps
 * @param {{ name: string, version?: string, description?: string, routes: URL }} deps.service  `routes`:
 *   the module whose default export is the service's routes (a Fastify plugin), imported here
 * @param {Function} deps.collectMetrics  (format) resolves to the exposition of the whole process
 * @param {object} [deps.tracing]  the instance's tracing (telemetry/tracing.js), or null: no tracing work
 * @param {Function} [deps.databaseState]  'ok' | 'down' | 'unknown': see ops-routes.js
 */
export async function buildApp (deps) {
  const { service, config, log, metrics, pool, cache, tracing = null } = deps
  const app = Fastify({
    loggerInstance: log,
    childLoggerFactory: lazyRequestLogger,
    logController: new LogController({ disableRequestLogging: !config.LOG_REQUESTS }),
    requestIdHeader: false,
    genReqId: requestId,
    bodyLimit: 1024 * 1024,
    frameworkErrors,
    clientErrorHandler,
    // A client that trickles its headers or body (a byte every few seconds) is cut off: 408, connection
    // closed. Node checks these bounds once per connectionsCheckingInterval, so a request is cut at
    // most a second after its bound.
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    http: {
      headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: 1000
    }
  })
  app.setValidatorCompiler(validatorCompiler)
  app.decorate('config', config)
  app.decorate('pg', pool)
  app.decorate('cache', cache)
  app.decorate('metrics', metrics)
  // Set when shutdown starts: /readyz fails and answers ask clients to reconnect elsewhere.
  app.decorate('draining', false)

  await app.register(jsonBody)
  await app.register(requestIds)
  await app.register(requestTelemetry, { metrics, tracing })
  await app.register(errorContract, { tracing })
  await app.register(cachedReply, { cache })
  await app.register(openapi, { service })
  await app.register(opsRoutes, {
    config,
    cache,
    collectMetrics: deps.collectMetrics,
    databaseState: deps.databaseState ?? (() => 'unknown')
  })
  // The service's routes, in a scope of their own: load shedding and the declared errors are theirs.
  await app.register(async function serviceRoutes (scope) {
    await scope.register(loadShedding, { config })
    await scope.register(declaredErrors)
    await scope.register((await import(service.routes)).default)
  })

  app.addHook('onClose', async () => {
    await Promise.allSettled([pool.end(), cache.close()])
  })
  return app
}
