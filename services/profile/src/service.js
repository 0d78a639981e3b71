// The profile service, as the kit runs it: name, migrations and routes.
import routes from './routes.js'

export default {
  name: 'profile',
  version: '1.0.0',
  description: 'Restaurant profiles: create, read, replace, patch, delete; ETag / If-Match; the original client\'s /restaurants/:id/profile.',
  url: import.meta.url, // each worker thread imports this module again from here
  migrations: new URL('../migrations/', import.meta.url),
  routes
}
