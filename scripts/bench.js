// `npm run bench`: every service's benchmark, one after the other (never at once: they share the
// machine's cores with their load generator), each against bare Fastify measured in its own run,
// printed as one table.
//   npm run bench [-- --only product,flows] [--duration 10] [--workers 1] [--connections 50]
//                 [--products 100000] [--restaurants 100000] [--menus 200000]
import { parseArgs } from 'node:util'
import { table } from './bench/harness.js'

const benches = {
  product: await import('./bench/product.js'),
  profile: await import('./bench/profile.js'),
  menu: await import('./bench/menu.js'),
  flows: await import('./bench/flows.js')
}
const sizes = Object.assign({}, ...Object.values(benches).map((b) => b.defaults))

const { values } = parseArgs({
  options: {
    only: { type: 'string', default: Object.keys(benches).join(',') },
    duration: { type: 'string', default: '10' },
    workers: { type: 'string', default: '1' },
    connections: { type: 'string' },
    ...Object.fromEntries(Object.entries(sizes).map(([k, v]) => [k, { type: 'string', default: String(v) }]))
  }
})
const names = values.only.split(',')
for (const name of names) if (!benches[name]) throw new Error(`unknown benchmark ${name}: one of ${Object.keys(benches).join(', ')}`)
const numbers = Object.fromEntries(Object.entries(values).filter(([k]) => k !== 'only' && values[k] !== undefined).map(([k, v]) => [k, Number(v)]))

const rows = []
for (const name of names) rows.push(...await benches[name].run(numbers))

console.log(`\nWORKERS=${values.workers}, ${values.duration} s per case; data: ${Object.keys(sizes).map((k) => `${numbers[k]} ${k}`).join(', ')}`)
console.log('Each RPS / baseline is to bare Fastify (one thread) measured at the start and end of that service\'s own run.\n')
console.log(table(rows))
for (const name of names) {
  if (!benches[name].targets) continue
  console.log(`\n| ${name} target | result | met |\n| --- | --- | --- |`)
  for (const [target, met, value] of benches[name].targets(rows)) console.log(`| ${target} | ${value} | ${met ? 'yes' : 'NO'} |`)
}
