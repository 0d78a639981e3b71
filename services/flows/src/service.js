// The flows service, as the kit runs it: name, settings, migrations and routes.
import manifest from '../package.json' with { type: 'json' }

export default {
  name: 'flows',
  version: manifest.version, // the API document's version is the package's
  description: 'Traffic-flow aggregation: byte totals per hour, source, destination and VPC, exact with any number ' +
    'of writers; a 200 means committed.',
  url: import.meta.url, // each worker thread imports this module again from here
  migrations: new URL('../migrations/', import.meta.url),
  config: {
    properties: {
      FLOWS_BATCH_WINDOW_MS: {
        type: 'integer',
        minimum: 0,
        maximum: 1000,
        default: 0,
        description: 'group commit: how long an idle worker gathers concurrent POSTs before writing them as one ' +
          'transaction (0: it writes at once, and the POSTs that arrive meanwhile form the next group)'
      },
      FLOWS_FLUSH_MAX_ROWS: {
        type: 'integer',
        minimum: 1,
        maximum: 1_000_000,
        default: 10_000,
        description: 'group commit: records per flush at most (a larger single POST is written alone)'
      },
      FLOWS_MAX_BATCH: {
        type: 'integer',
        minimum: 1,
        maximum: 1_000_000,
        default: 10_000,
        description: 'records per POST at most (400 above)'
      },
      FLOWS_BODY_LIMIT: {
        type: 'integer', minimum: 1024, default: 4 * 1024 * 1024, description: 'bytes of POST body at most (413 above)'
      },
      FLOWS_IDEMPOTENCY_TTL_HOURS: {
        type: 'integer', minimum: 1, default: 24, description: 'how long an Idempotency-Key is remembered'
      }
    }
  },
  // Imported by the instances that serve: the other commands (a data load) never load the routes.
  routes: new URL('./routes.js', import.meta.url)
}
