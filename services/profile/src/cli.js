#!/usr/bin/env node
// profile serve | migrate | generate | load
import { runCli, dataCommands } from '@suite/kit'
import { CACHE_PREFIX } from './routes.js'

await runCli(new URL('./service.js', import.meta.url), dataCommands({
  etlModule: new URL('../etl/index.js', import.meta.url),
  cachePrefix: CACHE_PREFIX,
  table: 'restaurants',
  count: 'restaurants',
  defaultCount: 10_000_000,
  files: 'restaurants.csv'
}))
