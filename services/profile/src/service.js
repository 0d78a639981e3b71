// The profile service, as the kit runs it: name, migrations, routes and data set.
import manifest from '../package.json' with { type: 'json' }
import { serviceNamed } from '../../list.js'

// Every cache key starts with this; a data load deletes them all.
export const CACHE_PREFIX = 'profile:'

export default {
  name: 'profile',
  version: manifest.version, // the API document's version is the package's
  description: 'Restaurant profiles: create, read, replace, patch, delete; ETag / If-Match; ' +
    'the original client\'s /restaurants/:id/profile.',
  url: import.meta.url, // each worker thread imports this module again from here
  migrations: new URL('../migrations/', import.meta.url),
  // Imported by the instances that serve: the other commands (a data load) never load the routes.
  routes: new URL('./routes.js', import.meta.url),
  // Its data set (services/list.js) and the module that generates and loads it, run in a thread of its
  // own by the data commands; the cached answers a new data set makes old.
  data: serviceNamed('profile').data,
  etl: new URL('../etl/index.js', import.meta.url),
  cachePrefix: CACHE_PREFIX
}
