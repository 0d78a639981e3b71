#!/usr/bin/env node
// profile serve | migrate | generate | load
import { runCli, dataCommands } from '@suite/kit/cli'
import service, { CACHE_PREFIX } from './service.js'

await runCli(service, dataCommands({
  // A URL, not an import: generate, load and seed run it in a worker thread with a capped heap.
  etlModule: new URL('../etl/index.js', import.meta.url),
  cachePrefix: CACHE_PREFIX,
  table: 'restaurants',
  count: 'restaurants',
  defaultCount: 10_000_000,
  files: 'restaurants.csv'
}))
