// A deterministic generator of menus.csv at any scale: a third of the menus are links, the rest
// 10–19 dishes over 11 dish types × 11 subtypes. Rows are built as strings in batches and written
// with backpressure, so memory is constant whatever the count.
import { createWriteStream } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { once } from 'node:events'
import { finished } from 'node:stream/promises'
import { join } from 'node:path'

// mulberry32: small, fast, and the same sequence for the same seed everywhere.
function prng (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export const DISH_TYPES = ['Appetizers', 'Soups', 'Salads', 'Entrees', 'Sides', 'Desserts', 'Drinks', 'Brunch', 'Specials', 'Kids', 'Late Night']
export const SUB_TYPES = ['Vegan', 'Vegetarian', 'Gluten Free', 'Seafood', 'Poultry', 'Beef', 'Pork', 'Spicy', 'Classic', 'Seasonal', 'Chef\'s Choice']
const ADJECTIVES = ['Smoked', 'Grilled', 'Crispy', 'Roasted', 'Braised', 'Fresh', 'Spicy', 'Glazed', 'Seared', 'Stuffed', 'Pickled', 'Charred']
const NOUNS = ['Tofu', 'Salmon', 'Chicken', 'Short Rib', 'Pork Belly', 'Mushrooms', 'Cauliflower', 'Shrimp', 'Duck', 'Eggplant', 'Lamb', 'Squash']
const INGREDIENTS = ['garlic', 'basil', 'lemon', 'chili', 'ginger', 'scallion', 'miso', 'butter', 'thyme', 'sesame', 'honey', 'cilantro', 'lime', 'parmesan']

// The dish objects are written as JSON text directly (no JSON.stringify of objects: 10M menus),
// already CSV-quoted: every `"` of the JSON doubled. No generated string contains `"` or `\`.
const Q = '""'
const quoted = (s) => `${Q}${s}${Q}`

/** Writes menus.csv and manifest.json into `out`; resolves to the manifest. */
export async function generate ({ out, menus, seed = 1 }) {
  await mkdir(out, { recursive: true })
  const rand = prng(seed)
  const int = (n) => Math.floor(rand() * n)
  const file = createWriteStream(join(out, 'menus.csv'), { highWaterMark: 1 << 20 })
  file.write('id,dishes,link\n')
  const stats = { links: 0, dishes: 0 }
  let chunk = ''
  for (let id = 1; id <= menus; id++) {
    if (rand() < 1 / 3) {
      stats.links++
      chunk += `${id},,https://menus.example/r/${id}\n`
    } else {
      const n = 10 + int(10)
      stats.dishes += n
      let json = ''
      for (let i = 0; i < n; i++) {
        const price = (1 + int(6000) / 100).toFixed(2).replace(/\.?0+$/, '') // a JSON number, e.g. 12.5
        json += `${i ? ',' : ''}{${Q}dishType${Q}:${quoted(DISH_TYPES[int(11)])},${Q}subType${Q}:${quoted(SUB_TYPES[int(11)])},` +
          `${Q}dish${Q}:${quoted(`${ADJECTIVES[int(12)]} ${NOUNS[int(12)]}`)},${Q}price${Q}:${price},` +
          `${Q}ingredients${Q}:${quoted(`${INGREDIENTS[int(14)]}, ${INGREDIENTS[int(14)]}`)}}`
      }
      chunk += `${id},"[${json}]",\n`
    }
    if (chunk.length > 1 << 20) {
      const ok = file.write(chunk)
      chunk = ''
      if (!ok) await once(file, 'drain')
    }
  }
  file.end(chunk)
  await finished(file)
  const manifest = { seed, files: { 'menus.csv': { rows: menus, links: stats.links, dishes: stats.dishes } } }
  await writeFile(join(out, 'manifest.json'), JSON.stringify(manifest, null, 2))
  return manifest
}
