// What npm run bench and bench:compare share: the services' benchmarks, and the options that choose
// and size them (--only, --duration, --workers, --connections, each data set's size).
import { resolve } from 'node:path'
import { someOf, wholeNumber } from '@suite/kit/args'
import * as product from './product.js'
import * as profile from './profile.js'
import * as menu from './menu.js'
import * as flows from './flows.js'

export const benches = { product, profile, menu, flows }
const sizes = Object.assign({}, ...Object.values(benches).map((b) => b.defaults))
export const SIZE_NAMES = Object.keys(sizes)

/** The options of both commands; `only` defaults to `onlyDefault`. */
export const benchOptions = (onlyDefault) => ({
  only: { type: 'string', value: 'S,S,…', default: onlyDefault, help: 'the services to measure' },
  duration: { type: 'string', value: 'SECONDS', default: '10', help: 'per case' },
  workers: { type: 'string', value: 'N', default: '1', help: 'WORKERS threads of each service' },
  connections: { type: 'string', value: 'N', help: 'connections of the throughput cases (default: 50; flows: 32 and 256)' },
  'cpu-prof': { type: 'string', value: 'DIR', help: 'a V8 CPU profile of every thread of every server the run starts, into DIR/<service>-<cached|uncached|hello|same-bytes> (open them in Chrome DevTools or speedscope)' },
  ...Object.fromEntries(Object.entries(sizes).map(([k, v]) => [k, { type: 'string', value: 'N', default: String(v), help: `${k} in the data set` }]))
})

/** The parsed options: { names, numbers } — the services, and what each bench's run() takes. */
export function benchValues (values) {
  return {
    names: someOf(values, 'only', Object.keys(benches)),
    numbers: {
      duration: wholeNumber(values, 'duration', { min: 1 }),
      workers: wholeNumber(values, 'workers', { min: 1 }),
      ...(values.connections !== undefined && { connections: wholeNumber(values, 'connections', { min: 1 }) }),
      ...(values['cpu-prof'] !== undefined && { cpuProf: resolve(values['cpu-prof']) }),
      ...Object.fromEntries(SIZE_NAMES.map((k) => [k, wholeNumber(values, k, { min: 1 })]))
    }
  }
}
