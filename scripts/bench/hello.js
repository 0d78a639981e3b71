// The baseline of `npm run bench`: bare Fastify, one thread, one route, no kit.
import Fastify from 'fastify'

const app = Fastify()
app.get('/hello', async () => ({ hello: 'world' }))
app.get('/readyz', async () => ({ status: 'ready' }))
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) })
