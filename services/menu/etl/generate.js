// A deterministic generator of menus at any scale: a third of the menus are links, the rest 10–19
// dishes over 11 dish types × 11 subtypes. Dishes come from a pool rendered once (every type ×
// subtype pair is in it), so a menu costs a few random numbers and string joins: 10M menus are
// ~12 GB of JSON, and rendering every dish anew would make the generator the slow part.
// Menus are drawn in parts of PART ids, each from a PRNG of its own: `generate` (menus.csv) and
// `seed` (straight into PostgreSQL, in parallel streams) make the same menus for the same seed.
//   node services/menu/src/cli.js generate --out DIR --menus N [--seed S]
//   node services/menu/src/cli.js seed --menus N [--seed S] [--streams K]
import { prng, createOutput } from '@suite/kit/etl'

export const DISH_TYPES = [
  'Appetizers', 'Soups', 'Salads', 'Entrees', 'Sides', 'Desserts', 'Drinks', 'Brunch', 'Specials', 'Kids', 'Late Night'
]
export const SUB_TYPES = [
  'Vegan', 'Vegetarian', 'Gluten Free', 'Seafood', 'Poultry', 'Beef', 'Pork', 'Spicy', 'Classic', 'Seasonal',
  'Chef\'s Choice'
]
const ADJECTIVES = [
  'Smoked', 'Grilled', 'Crispy', 'Roasted', 'Braised', 'Fresh', 'Spicy', 'Glazed', 'Seared', 'Stuffed', 'Pickled',
  'Charred'
]
const NOUNS = [
  'Tofu', 'Salmon', 'Chicken', 'Short Rib', 'Pork Belly', 'Mushrooms', 'Cauliflower', 'Shrimp', 'Duck', 'Eggplant',
  'Lamb', 'Squash'
]
const INGREDIENTS = [
  'garlic', 'basil', 'lemon', 'chili', 'ginger', 'scallion', 'miso', 'butter', 'thyme', 'sesame', 'honey', 'cilantro',
  'lime', 'parmesan'
]
const POOL_PER_PAIR = 24 // distinct dishes per (dishType, subType): 2,904 in the pool
export const PART = 100_000 // menus per part (tests use smaller parts to have several)
const FILE = 'menus.csv'

/** The dish pool of a seed: each dish as JSON. */
export function dishPool (seed) {
  const rand = prng(seed)
  const int = (n) => Math.floor(rand() * n)
  return Array.from({ length: DISH_TYPES.length * SUB_TYPES.length * POOL_PER_PAIR }, (_, i) => JSON.stringify({
    dishType: DISH_TYPES[i % DISH_TYPES.length],
    subType: SUB_TYPES[Math.floor(i / DISH_TYPES.length) % SUB_TYPES.length],
    dish: `${ADJECTIVES[int(ADJECTIVES.length)]} ${NOUNS[int(NOUNS.length)]}`,
    price: Math.round(100 + rand() * 5900) / 100, // a JSON number of dollars, e.g. 12.5
    ingredients: `${INGREDIENTS[int(INGREDIENTS.length)]}, ${INGREDIENTS[int(INGREDIENTS.length)]}`
  }))
}

/**
 * The menus of one part as [id, dishes, link]: dishes the menu's entries of `pool` (which may hold
 * each dish in another form: quoted for CSV, encoded for COPY), or null for a link menu.
 */
export function * menusOfPart (part, { menus, seed, pool, partSize = PART }) {
  const rand = prng(seed * 100_003 + part + 1)
  const int = (n) => Math.floor(rand() * n)
  const last = Math.min(menus, (part + 1) * partSize)
  for (let id = part * partSize + 1; id <= last; id++) {
    if (rand() < 1 / 3) {
      yield [id, null, `https://menus.example/r/${id}`]
    } else {
      const dishes = new Array(10 + int(10))
      for (let i = 0; i < dishes.length; i++) dishes[i] = pool[int(pool.length)]
      yield [id, dishes, null]
    }
  }
}

/** Writes menus.csv and manifest.json into `out`; resolves to the manifest. */
export async function generate ({ out, menus, seed = 1, partSize = PART }) {
  // Each dish as JSON already quoted for a CSV field (every `"` doubled); no word holds `"` or `\`.
  const pool = dishPool(seed).map((json) => json.replaceAll('"', '""'))
  const output = await createOutput(out, { [FILE]: 'id,dishes,link' })
  let links = 0
  let dishes = 0
  for (let part = 0; part * partSize < menus; part++) {
    for (const [id, menu, link] of menusOfPart(part, { menus, seed, pool, partSize })) {
      if (link) {
        links++
        output.row(FILE, `${id},,${link}`)
      } else {
        dishes += menu.length
        output.row(FILE, `${id},"[${menu.join(',')}]",`)
      }
      // Rows the loader must reject, at fixed places so that small sets have them too.
      if (id === 7) {
        output.row(FILE, '7000000000,,https://menus.example/r/out-of-range')
        output.expect(FILE, 'invalid_id')
      }
      if (id === 8) {
        output.row(FILE, `${menus + 1},"[{""dishType"":""Soups""",`)
        output.expect(FILE, 'invalid_dishes')
      }
      if (id === 9) { output.row(FILE, '9,,https://menus.example/r/9-again'); output.expect(FILE, 'duplicate_id') }
      if (id % 2048 === 0) await output.flush()
    }
  }
  return output.close({ seed, menus, links, dishes })
}
