// A deterministic generator of menus.csv at any scale: a third of the menus are links, the rest
// 10–19 dishes over 11 dish types × 11 subtypes. Dishes come from a pool rendered once (every type ×
// subtype pair is in it), so a menu costs a few random numbers and string joins: 10M menus are
// ~12 GB of JSON, and rendering every dish anew would make the generator the slow part.
//   node services/menu/src/cli.js generate --out DIR --menus N [--seed S]
import { prng, createOutput } from '@suite/kit/etl'

export const DISH_TYPES = ['Appetizers', 'Soups', 'Salads', 'Entrees', 'Sides', 'Desserts', 'Drinks', 'Brunch', 'Specials', 'Kids', 'Late Night']
export const SUB_TYPES = ['Vegan', 'Vegetarian', 'Gluten Free', 'Seafood', 'Poultry', 'Beef', 'Pork', 'Spicy', 'Classic', 'Seasonal', 'Chef\'s Choice']
const ADJECTIVES = ['Smoked', 'Grilled', 'Crispy', 'Roasted', 'Braised', 'Fresh', 'Spicy', 'Glazed', 'Seared', 'Stuffed', 'Pickled', 'Charred']
const NOUNS = ['Tofu', 'Salmon', 'Chicken', 'Short Rib', 'Pork Belly', 'Mushrooms', 'Cauliflower', 'Shrimp', 'Duck', 'Eggplant', 'Lamb', 'Squash']
const INGREDIENTS = ['garlic', 'basil', 'lemon', 'chili', 'ginger', 'scallion', 'miso', 'butter', 'thyme', 'sesame', 'honey', 'cilantro', 'lime', 'parmesan']
const POOL_PER_PAIR = 24 // distinct dishes per (dishType, subType): 2,904 in the pool
const FILE = 'menus.csv'

/** Writes menus.csv and manifest.json into `out`; resolves to the manifest. */
export async function generate ({ out, menus, seed = 1 }) {
  const rand = prng(seed)
  const int = (n) => Math.floor(rand() * n)
  // Each dish as JSON already quoted for a CSV field (every `"` doubled); no word holds `"` or `\`.
  const pool = []
  for (let i = 0; i < DISH_TYPES.length * SUB_TYPES.length * POOL_PER_PAIR; i++) {
    const dish = {
      dishType: DISH_TYPES[i % DISH_TYPES.length],
      subType: SUB_TYPES[Math.floor(i / DISH_TYPES.length) % SUB_TYPES.length],
      dish: `${ADJECTIVES[int(ADJECTIVES.length)]} ${NOUNS[int(NOUNS.length)]}`,
      price: Math.round(100 + rand() * 5900) / 100, // a JSON number of dollars, e.g. 12.5
      ingredients: `${INGREDIENTS[int(INGREDIENTS.length)]}, ${INGREDIENTS[int(INGREDIENTS.length)]}`
    }
    pool.push(JSON.stringify(dish).replaceAll('"', '""'))
  }

  const output = await createOutput(out, { [FILE]: 'id,dishes,link' })
  let links = 0
  let dishes = 0
  for (let id = 1; id <= menus; id++) {
    if (rand() < 1 / 3) {
      links++
      output.row(FILE, `${id},,https://menus.example/r/${id}`)
    } else {
      const n = 10 + int(10)
      dishes += n
      let json = pool[int(pool.length)]
      for (let i = 1; i < n; i++) json += ',' + pool[int(pool.length)]
      output.row(FILE, `${id},"[${json}]",`)
    }
    // Rows the loader must reject, at fixed places so that small sets have them too.
    if (id === 7) { output.row(FILE, '7000000000,,https://menus.example/r/out-of-range'); output.expect(FILE, 'invalid_id') }
    if (id === 8) { output.row(FILE, `${menus + 1},"[{""dishType"":""Soups""",`); output.expect(FILE, 'invalid_dishes') }
    if (id === 9) { output.row(FILE, '9,,https://menus.example/r/9-again'); output.expect(FILE, 'duplicate_id') }
    if (id % 2048 === 0) await output.flush()
  }
  return output.close({ seed, menus, links, dishes })
}
