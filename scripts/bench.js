// `npm run bench`: every service's benchmark, one after the other (never at once: they share the
// machine's cores with their load generator), each against bare Fastify measured in its own run.
//   npm run bench [-- --only product,flows] [--duration 10] [--workers 1]
import { parseArgs } from 'node:util'

const benches = {
  product: './bench/product.js',
  flows: './bench/flows.js'
}

const { values } = parseArgs({
  options: {
    only: { type: 'string', default: Object.keys(benches).join(',') },
    duration: { type: 'string', default: '10' },
    workers: { type: 'string', default: '1' }
  }
})
const opts = { duration: Number(values.duration), workers: Number(values.workers) }
const results = []
for (const name of values.only.split(',')) {
  if (!benches[name]) throw new Error(`unknown benchmark ${name}: one of ${Object.keys(benches).join(', ')}`)
  const bench = await import(benches[name])
  results.push([name, bench.table(await bench.run(opts))])
}
console.log(`\nWORKERS=${opts.workers}, ${opts.duration} s per case; each ratio is to bare Fastify measured in the same run\n`)
for (const [name, table] of results) console.log(`## ${name}\n\n${table}\n`)
