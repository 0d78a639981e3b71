// The entry of one worker thread: runs an instance of the service (instance.js) and answers the main
// thread (workers.js) over their channel.
import { parentPort, workerData } from 'node:worker_threads'
import { createInstance } from './instance.js'
import { channel } from './channel.js'

const { serviceUrl, ...deps } = workerData
// Imported by URL, not statically: this thread runs whichever service started it, and its routes are
// code, which cannot be sent to a thread.
const service = (await import(serviceUrl)).default

// The instance asks the main thread only once it serves; the channel opens once the instance exists,
// so the main thread's requests wait in the port until then.
let main
const instance = await createInstance({ ...deps, service, call: (op, args) => main.request(op, args) })
main = channel(parentPort, {
  ...instance.answers,
  // Ends this thread only; exit code 1: requests were cut.
  shutdown: async () => process.exit(await instance.shutdown())
})
await main.request('listening', { address: await instance.listen() })
