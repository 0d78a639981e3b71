// The OpenAPI document of the service (/docs/json) and its UI (/docs), from the routes' schemas.
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'

const ERROR_CONTRACT = 'Every 4xx and 5xx answer, whatever produces it (validation, the body parser, an ' +
  'unknown path: 404, an undeclared method on a known path: 405 with Allow, 413, 414, 415, 431, 503), is ' +
  '`application/json` `{statusCode, error, message}`; a 400 names the field (`body/3/hour is required`).'

export const openapi = fp(async function openapi (app, { service }) {
  await app.register(swagger, {
    openapi: {
      info: {
        title: `${service.name} API`,
        version: service.version ?? '0.0.0',
        description: `${service.description}\n\n${ERROR_CONTRACT}`
      },
      tags: [{ name: 'ops', description: 'health and metrics' }]
    },
    refResolver: { buildLocalReference: (json, baseUri, fragment, i) => json.$id ?? `def-${i}` }
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
}, { name: 'openapi' })
