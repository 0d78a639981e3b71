// The thread in which the `generate` command runs a service's generator (see cli/data-commands.js for why a thread).
import { workerData } from 'node:worker_threads'
import { runInThread } from './thread.js'

const { etlModule, options } = workerData
// By URL: the service that started this thread names its own data module.
const { generate } = await import(etlModule)
await runInThread(() => generate(options))
