// `npm run explain`: EXPLAIN (ANALYZE, BUFFERS) of every product query on a loaded catalogue — the
// evidence for the indexes in services/product/migrations — next to the OFFSET query it replaces.
//   npm run explain [-- --products 100000]   (--help: the options)
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { migrate } from '@suite/kit'
import { startPostgres } from '@suite/kit/testing'
import { commandLine, wholeNumber } from '@suite/kit/args'
import { pgTarget } from '@suite/kit/etl'
import { generate, load } from '../services/product/etl/index.js'
import * as sql from '../services/product/src/sql.js'

const usage = {
  usage: 'npm run explain -- [options]   (or node scripts/explain.js [options])',
  summary: 'Loads a generated catalogue into a throwaway PostgreSQL and prints EXPLAIN (ANALYZE, BUFFERS) ' +
    'of every product query — by id, styles, related, page 1, the deepest page by its seq range, ' +
    'the same page with OFFSET as the journal did, the keyset page — the evidence for the indexes in ' +
    'services/product/migrations. The data is generated once into .data/ and reused.',
  options: {
    products: {
      type: 'string',
      value: 'N',
      default: '100000',
      help: 'products in the catalogue (1000011: the real Atelier size)'
    }
  },
  examples: ['npm run explain', 'npm run explain -- --products 1000011']
}
const PRODUCTS = commandLine('explain', usage, (opts) => wholeNumber(opts, 'products', { min: 1 }))
const root = fileURLToPath(new URL('..', import.meta.url))
const dir = `${root}.data/${PRODUCTS === 1000011 ? 'atelier-full' : `bench-${PRODUCTS}`}`

const server = await startPostgres({ settings: { shared_buffers: '512MB' } })
const client = new pg.Client({ connectionString: await server.createDatabase('explain') })
try {
  await client.connect()
  if (!existsSync(`${dir}/manifest.json`)) await generate({ out: dir, products: PRODUCTS, seed: 1 })
  await migrate(client, { name: 'product', migrations: `${root}services/product/migrations` })
  await load({ db: pgTarget(client), dir, rejectsFile: `${dir}/rejects.csv`, progress: false })
  const { rows: [{ n, mid }] } = await client.query('SELECT max(seq) AS n, ' +
    '(SELECT id FROM products WHERE seq = (SELECT max(seq) / 2 FROM products)) AS mid FROM products')
  const last = Math.ceil(n / 5)
  const cases = [
    ['GET /products/:id', sql.product.text, [mid]],
    ['GET /products/:id/styles', sql.styles.text, [mid]],
    ['GET /products/:id/related', sql.related.text, [mid]],
    ['GET /products?page=1&count=5', sql.productPage.text, [0, 5]],
    [`GET /products?page=${last}&count=5 (seq range)`, sql.productPage.text, [(last - 1) * 5, last * 5]],
    [
      'the same page with OFFSET, as the journal did (replaced)',
      'SELECT * FROM products ORDER BY id LIMIT 5 OFFSET $1',
      [(last - 1) * 5]
    ],
    ['GET /products?after=<id>&count=5 (keyset)', sql.productsAfter.text, [mid, 5]]
  ]
  for (const [name, text, params] of cases) {
    await client.query(`EXPLAIN (ANALYZE) ${text}`, params) // warm the buffers first
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, params)
    console.log(`\n## ${name}\n`)
    for (const r of rows) console.log(`    ${r['QUERY PLAN']}`)
  }
} finally {
  await client.end()
  await server.stop()
}
