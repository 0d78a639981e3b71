// The menu service, as the kit runs it: name, migrations and routes.
import manifest from '../package.json' with { type: 'json' }

// Every cache key starts with this; a data load deletes them all.
export const CACHE_PREFIX = 'menu:'

export default {
  name: 'menu',
  version: manifest.version, // the API document's version is the package's
  description: 'Restaurant menus: a list of dishes or a link to the restaurant\'s own menu.',
  url: import.meta.url, // each worker thread imports this module again from here
  migrations: new URL('../migrations/', import.meta.url),
  // Imported by the instances that serve: the other commands (a data load) never load the routes.
  routes: new URL('./routes.js', import.meta.url)
}
