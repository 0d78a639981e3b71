#!/usr/bin/env node
// menu serve | migrate | generate | load | seed
import { runCli, dataCommands } from '@suite/kit'
import { CACHE_PREFIX } from './routes.js'

await runCli(new URL('./service.js', import.meta.url), dataCommands({
  etlModule: new URL('../etl/index.js', import.meta.url),
  cachePrefix: CACHE_PREFIX,
  table: 'menus',
  count: 'menus',
  defaultCount: 10_000_000,
  files: 'menus.csv',
  seed: true
}))
