// The thread in which the `generate` command runs a service's generator (see cli.js for why a thread).
import { workerData, parentPort } from 'node:worker_threads'

const { etlModule, options } = workerData
const { generate } = await import(etlModule)
parentPort.postMessage(await generate(options))
