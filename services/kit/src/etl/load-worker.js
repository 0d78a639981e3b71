// The thread in which `loadCommand` runs a service's load (see cli.js for why a thread).
import { workerData } from 'node:worker_threads'
import pg from 'pg'
import { pgTarget } from './copy.js'
import { connectionOptions } from '../pg.js'
import { runInThread } from './thread.js'

const { etlModule, databaseUrl, databasePassword, applicationName, dir, rejectsFile, progress, limits } = workerData
// By URL: the service that started this thread names its own data module.
const { load } = await import(etlModule)
await runInThread(async () => {
  const client = new pg.Client({ ...connectionOptions(databaseUrl, databasePassword), application_name: applicationName })
  await client.connect()
  try {
    const summary = await load({ db: pgTarget(client), dir, rejectsFile, progress, ...limits })
    return summary.files.map((f) => ({ file: f.file, loaded: f.loaded, rejected: f.rejected }))
  } finally {
    await client.end()
  }
})
