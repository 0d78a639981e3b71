#!/usr/bin/env node
// product serve | migrate | generate | load
import { runCli, dataCommands } from '@suite/kit'
import { CACHE_PREFIX } from './routes.js'

await runCli(new URL('./service.js', import.meta.url), dataCommands({
  etlModule: new URL('../etl/index.js', import.meta.url),
  cachePrefix: CACHE_PREFIX,
  table: 'products',
  count: 'products',
  defaultCount: 1_000_011,
  files: 'the six Atelier CSVs (product, styles, photos, skus, features, related)'
}))
