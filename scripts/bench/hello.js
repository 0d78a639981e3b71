// The baselines of `npm run bench`: bare Fastify, one thread, no kit. GET /hello; and, with BODIES
// (a JSON file: "METHOD /path" → { status, type, body (base64) }), each of those requests answered with
// exactly the bytes and content type the measured service sent for it, from a Buffer: what the same
// answer costs with nothing but Fastify in the way. A POST's JSON body is parsed first (Fastify's own
// parser), as any implementation of the route has to.
import Fastify from 'fastify'
import { readFileSync } from 'node:fs'

const app = Fastify()
app.get('/hello', async () => ({ hello: 'world' }))
app.get('/readyz', async () => ({ status: 'ready' }))
if (process.env.BODIES) {
  const answers = new Map(Object.entries(JSON.parse(readFileSync(process.env.BODIES, 'utf8')))
    .map(([request, a]) => [request, { status: a.status, type: a.type, body: Buffer.from(a.body, 'base64') }]))
  const answer = (request, reply) => {
    const a = answers.get(`${request.method} ${request.url}`)
    if (!a) return reply.code(404).send()
    return reply.code(a.status).type(a.type).send(a.body)
  }
  app.get('/*', answer)
  app.post('/*', answer)
}
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) })
// A clean exit on SIGTERM, so that --cpu-prof writes its profile.
process.once('SIGTERM', () => app.close().then(() => process.exit(0)))
