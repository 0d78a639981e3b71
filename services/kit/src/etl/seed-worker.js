// The thread in which `seedCommand` runs a service's seed (see cli/data-commands.js for why a thread).
import { workerData } from 'node:worker_threads'
import pg from 'pg'
import { pgTarget } from './copy.js'
import { connectionOptions } from '../data/connection.js'
import { runInThread } from './thread.js'

const { etlModule, databaseUrl, databasePassword, applicationName, options, progress } = workerData
// By URL: the service that started this thread names its own data module.
const { seed } = await import(etlModule)
async function connect () {
  const client = new pg.Client({
    ...connectionOptions(databaseUrl, databasePassword),
    application_name: applicationName
  })
  await client.connect()
  return { ...pgTarget(client), end: () => client.end() }
}
await runInThread(() => seed({ ...options, connect, progress }))
