// The thread in which `loadCommand` runs a service's load (see cli.js for why a thread).
import { workerData } from 'node:worker_threads'
import pg from 'pg'
import { pgTarget } from './copy.js'
import { connectionOptions } from '../pg.js'

const { etlModule, databaseUrl, databasePassword, applicationName, dir, rejectsFile, progress } = workerData
const { load } = await import(etlModule)
const client = new pg.Client({ ...connectionOptions(databaseUrl, databasePassword), application_name: applicationName })
await client.connect()
try {
  await load({ db: pgTarget(client), dir, rejectsFile, progress })
} finally {
  await client.end()
}
