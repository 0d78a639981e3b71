#!/usr/bin/env node
// product serve | migrate | generate | load
import { runCli, loadCommand } from '@suite/kit'
import { generate } from '../etl/index.js'
import { CACHE_PREFIX } from './routes.js'

await runCli(new URL('./service.js', import.meta.url), {
  generate: {
    summary: 'write Atelier-shaped CSVs: --out DIR [--products 1000011] [--seed 1] (deterministic)',
    config: false,
    options: { out: { type: 'string' }, products: { type: 'string', default: '1000011' }, seed: { type: 'string', default: '1' } },
    async run ({ out, products, seed }, { log }) {
      if (!out) throw new Error('generate needs --out DIR')
      const manifest = await generate({ out, products: Number(products), seed: Number(seed) })
      for (const [file, f] of Object.entries(manifest.files)) log.info(`${file}: ${f.rows} rows`)
    }
  },
  load: loadCommand({ etlModule: new URL('../etl/index.js', import.meta.url), cachePrefix: CACHE_PREFIX })
})
