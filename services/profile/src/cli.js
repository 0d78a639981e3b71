#!/usr/bin/env node
// profile serve | migrate | generate | load
import { runCli, loadCommand } from '@suite/kit'
import { generate } from '../etl/generate.js'
import { CACHE_PREFIX } from './routes.js'

await runCli(new URL('./service.js', import.meta.url), {
  generate: {
    summary: 'write restaurants.csv: --out DIR [--restaurants 10000000] [--seed 1] (deterministic)',
    config: false,
    options: { out: { type: 'string' }, restaurants: { type: 'string', default: '10000000' }, seed: { type: 'string', default: '1' } },
    async run ({ out, restaurants, seed }, { log }) {
      if (!out) throw new Error('generate needs --out DIR')
      const manifest = await generate({ out, restaurants: Number(restaurants), seed: Number(seed) })
      log.info(`restaurants.csv: ${manifest.files['restaurants.csv'].rows} rows`)
    }
  },
  load: loadCommand({ etlModule: new URL('../etl/index.js', import.meta.url), cachePrefix: CACHE_PREFIX })
})
