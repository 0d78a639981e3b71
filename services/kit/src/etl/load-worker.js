// The thread in which `loadCommand` runs a service's load (see cli/data-commands.js for why a thread).
import { workerData } from 'node:worker_threads'
import pg from 'pg'
import { pgTarget } from './copy.js'
import { connectionOptions } from '../data/connection.js'
import { runInThread } from './thread.js'

const { etlModule, databaseUrl, databasePassword, applicationName, dir, rejectsFile, progress, limits } = workerData
// By URL: the service that started this thread names its own data module.
const { load } = await import(etlModule)
await runInThread(async () => {
  // Two connections: the files are copied on one while the tables already loaded get their indexes on the other.
  const [client, indexClient] = [0, 1].map(() => new pg.Client({
    ...connectionOptions(databaseUrl, databasePassword),
    application_name: applicationName
  }))
  try {
    await Promise.all([client.connect(), indexClient.connect()])
    const summary = await load({
      db: pgTarget(client),
      indexDb: pgTarget(indexClient),
      dir,
      rejectsFile,
      progress,
      ...limits
    })
    return summary.files.map((f) => ({ file: f.file, loaded: f.loaded, rejected: f.rejected }))
  } finally {
    await Promise.allSettled([client.end(), indexClient.end()])
  }
})
