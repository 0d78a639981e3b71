// What npm run bench and bench:compare share: the services' benchmarks, and the options that choose
// and size them (--only, --duration, --workers, --connections, --env, each data set's size).
import { resolve } from 'node:path'
import { someOf, oneOf, wholeNumber, settings, UsageError } from '@suite/kit/args'
import { baseSchema } from '@suite/kit'
import { SERVICES } from '../../services/list.js'
import * as product from './product.js'
import * as profile from './profile.js'
import * as menu from './menu.js'
import * as flows from './flows.js'
import * as tracing from './tracing.js'
import * as replication from './replication.js'
import { ORIGINAL_CONNECTIONS } from './original.js'
import { checkOriginal } from './original-service.js'

// The services' benchmarks, what tracing costs (on product), and what synchronous replication costs
// a write (flows and profile); --only picks among them.
export const benches = { product, profile, menu, flows, tracing, replication }
// Each service's definition (its settings, for --env), by name.
const definitions = Object.fromEntries(await Promise.all(SERVICES.map(async ({ name }) =>
  [name, (await import(`../../services/${name}/src/service.js`)).default])))
definitions.tracing = definitions.product
definitions.replication = definitions.flows
// What the bench sets itself on every service it starts (--workers for WORKERS).
const BENCH_SETTINGS = ['DATABASE_URL', 'REDIS_URL', 'WORKERS', 'CACHE_ENABLED', 'HOST', 'PORT']
const sizes = Object.assign({}, ...Object.values(benches).map((b) => b.defaults))
const originalSizes = Object.assign({}, ...Object.values(benches).map((b) => b.originalDefaults))
export const SIZE_NAMES = Object.keys(sizes)

/** The options of both commands (`original`: npm run bench's alone); `only` defaults to `onlyDefault`. */
export const benchOptions = (onlyDefault, { original = true } = {}) => ({
  only: { type: 'string', value: 'S,S,…', default: onlyDefault, help: 'the services to measure' },
  duration: { type: 'string', value: 'SECONDS', default: '10', help: 'per case' },
  workers: { type: 'string', value: 'N', default: '1', help: 'WORKERS threads of each service' },
  connections: {
    type: 'string',
    value: 'N',
    help: 'connections of the throughput cases (default: 50; flows: 32 and 256; ' +
      `${ORIGINAL_CONNECTIONS} with --traffic original)`
  },
  traffic: {
    type: 'string',
    value: 'KIND',
    default: 'mix',
    help: 'mix: each service\'s routes on its own data set, warmed; original: profile and menu on their originals\' ' +
      'own traffic and scale (10M rows, 60 connections, from a cold start; the data is generated and loaded once, ' +
      'which takes minutes), with the read-path targets'
  },
  env: {
    type: 'string',
    value: 'NAME=VALUE',
    multiple: true,
    default: [],
    help: 'a setting of this tree\'s services (services/README.md, Configuration), e.g. CACHE_NEAR_MAX_BYTES=16777216'
  },
  ...original && {
    original: {
      type: 'string',
      value: 'DIR',
      help: 'with --traffic original --only profile: also the original profile service, from its checkout in DIR ' +
        '(prepared as docs/benchmarks.md says), side by side with ours on the same rows and mix'
    }
  },
  'cpu-prof': {
    type: 'string',
    value: 'DIR',
    help: 'a V8 CPU profile of every thread of every server the run starts, into ' +
      'DIR/<service>-<cached|uncached|hello|same-bytes> (open them in Chrome DevTools or speedscope)'
  },
  ...Object.fromEntries(Object.entries(sizes).map(([k, v]) => {
    const withOriginal = originalSizes[k] ? `; ${originalSizes[k]} with --traffic original` : ''
    return [k, { type: 'string', value: 'N', help: `${k} in the data set (default: ${v}${withOriginal})` }]
  }))
})

/** --env (--base-env): settings that every measured service reads, and that the bench does not set itself. */
export function settingsOf (values, option, names) {
  const given = settings(values, option)
  for (const name of Object.keys(given)) {
    if (BENCH_SETTINGS.includes(name)) {
      const hint = name === 'WORKERS' ? ' (use --workers)' : ''
      throw new UsageError(`--${option} ${name}: the bench sets it itself${hint}`)
    }
    const without = names.filter((s) =>
      !(name in baseSchema.properties) && !(name in (definitions[s].config?.properties ?? {})))
    if (without.length) throw new UsageError(`--${option} ${name}: not a setting of ${without.join(', ')}`)
  }
  return given
}

/** The parsed options: { names, numbers } — the services, and what each bench's run() takes. */
export function benchValues (values) {
  const traffic = oneOf(values, 'traffic', ['mix', 'original'])
  const names = someOf(values, 'only', Object.keys(benches))
  const without = names.filter((n) => traffic === 'original' && !benches[n].originalDefaults)
  if (without.length) {
    const have = Object.keys(benches).filter((n) => benches[n].originalDefaults).join(',')
    throw new UsageError(`--traffic original: ${without.join(', ')} has no original traffic (use --only ${have})`)
  }
  const given = (k) => values[k] !== undefined
  if (given('original')) {
    if (traffic !== 'original' || names.join() !== 'profile') {
      throw new UsageError('--original: with --traffic original --only profile ' +
        '(the original is the profile service\'s)')
    }
    checkOriginal(resolve(values.original))
  }
  return {
    names,
    numbers: {
      traffic,
      settings: settingsOf(values, 'env', names),
      duration: wholeNumber(values, 'duration', { min: 1 }),
      workers: wholeNumber(values, 'workers', { min: 1 }),
      ...(given('connections')
        ? { connections: wholeNumber(values, 'connections', { min: 1 }) }
        : traffic === 'original' && { connections: ORIGINAL_CONNECTIONS }),
      ...(given('cpu-prof') && { cpuProf: resolve(values['cpu-prof']) }),
      ...(given('original') && { original: resolve(values.original) }),
      ...Object.fromEntries(SIZE_NAMES.map((k) =>
        [k, given(k) ? wholeNumber(values, k, { min: 1 }) : (traffic === 'original' && originalSizes[k]) || sizes[k]]))
    }
  }
}
