// The profile service, as the kit runs it: name, migrations and routes.
import manifest from '../package.json' with { type: 'json' }
import routes from './routes.js'

export default {
  name: 'profile',
  version: manifest.version, // the API document's version is the package's
  description: 'Restaurant profiles: create, read, replace, patch, delete; ETag / If-Match; the original client\'s /restaurants/:id/profile.',
  url: import.meta.url, // each worker thread imports this module again from here
  migrations: new URL('../migrations/', import.meta.url),
  routes
}
