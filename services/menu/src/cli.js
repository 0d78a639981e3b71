#!/usr/bin/env node
// menu serve | migrate | generate | load
import { runCli, loadCommand } from '@suite/kit'
import { generate } from '../etl/index.js'
import { CACHE_PREFIX } from './routes.js'

await runCli(new URL('./service.js', import.meta.url), {
  generate: {
    summary: 'write menus.csv: --out DIR [--menus 10000000] [--seed 1] (deterministic)',
    config: false,
    options: { out: { type: 'string' }, menus: { type: 'string', default: '10000000' }, seed: { type: 'string', default: '1' } },
    async run ({ out, menus, seed }, { log }) {
      if (!out) throw new Error('generate needs --out DIR')
      const manifest = await generate({ out, menus: Number(menus), seed: Number(seed) })
      log.info(`menus.csv: ${JSON.stringify(manifest.files['menus.csv'])}`)
    }
  },
  load: loadCommand({ etlModule: new URL('../etl/index.js', import.meta.url), cachePrefix: CACHE_PREFIX })
})
