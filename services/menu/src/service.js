// The menu service, as the kit runs it: name, migrations and routes.
import manifest from '../package.json' with { type: 'json' }
import routes from './routes.js'

export default {
  name: 'menu',
  version: manifest.version, // the API document's version is the package's
  description: 'Restaurant menus: a list of dishes or a link to the restaurant\'s own menu.',
  url: import.meta.url, // each worker thread imports this module again from here
  migrations: new URL('../migrations/', import.meta.url),
  routes
}
