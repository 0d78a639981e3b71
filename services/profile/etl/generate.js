// A deterministic, faker-like generator of restaurants.csv at any scale (word lists + a seeded PRNG,
// no dependency). A few planted rows must be rejected; manifest.json counts them by reason.
//   node services/profile/src/cli.js generate --out DIR --restaurants N [--seed S]
import { prng, createOutput } from '@suite/kit/etl'

const FIRST = [
  'Joe\'s', 'Mama\'s', 'The Golden', 'Little', 'Big', 'Blue', 'Café', 'Le Petit', 'El', 'Old Town', 'Señor', 'Happy',
  'Lucky', 'Green', 'Royal', 'Smokin\''
]
const SECOND = [
  'Dragon', 'Kitchen', 'Bistro', 'Grill', 'Noodle', 'Taqueria', 'Diner', 'Pizzeria', 'Sushi', 'Crêperie', 'Garden',
  'Table', 'Spoon', 'Wok', 'Oven', 'Fork'
]
const CUISINES = [
  'American', 'Chinese', 'Mexican', 'Italian', 'Japanese', 'Thai', 'Indian', 'French', 'Greek', 'Korean', 'Vietnamese',
  'Mediterranean', 'Ethiopian', 'Peruvian'
]
const STREETS = [
  'Main St', 'Oak Ave', 'Market St', 'Mission St', 'Broadway', 'Elm St', 'Pine St', 'Valencia St', 'Sunset Blvd',
  'Lake Rd'
]
const CITIES = [
  'San Francisco, CA', 'Oakland, CA', 'Austin, TX', 'Seattle, WA', 'Brooklyn, NY', 'Chicago, IL', 'Denver, CO',
  'Portland, OR'
]

// A CSV field: quoted when it holds a comma or a quote (doubled inside).
const csv = (s) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s)

/** Writes restaurants.csv and manifest.json into `out`; resolves to the manifest. */
export async function generate ({ out, restaurants, seed = 1 }) {
  const rand = prng(seed)
  const int = (n) => Math.floor(rand() * n)
  const pick = (list) => list[int(list.length)]
  const FILE = 'restaurants.csv'
  const output = await createOutput(out, {
    [FILE]: 'id,name,address,phone,picture,cuisine,price_range,stars,quality,delivery,accuracy'
  })

  for (let id = 1; id <= restaurants; id++) {
    const name = `${pick(FIRST)} ${pick(SECOND)}`
    const address = `${100 + int(9900)} ${pick(STREETS)}, ${pick(CITIES)} ${10000 + int(89999)}`
    const phone = `(${200 + int(800)}) ${100 + int(900)}-${String(int(10000)).padStart(4, '0')}`
    const stars = (int(51) / 10).toFixed(1)
    let line = `${id},${csv(name)},${csv(address)},${phone},https://picsum.photos/seed/${id}/400/300,` +
      `${pick(CUISINES)},${1 + int(4)},${stars},${int(101)},${int(101)},${int(101)}`
    // Quirks at fixed places, so small sets have them too: a bad number and a repeated id.
    if (id === 7) {
      line = line.replace(/,[\d.]+,(\d+),(\d+),(\d+)$/, ',four,$1,$2,$3')
      output.expect(FILE, 'invalid_stars')
    }
    output.row(FILE, line)
    if (id === 9) {
      output.row(FILE, '9,Duplicate of nine,1 Main St,(555) 555-5555,https://example.com/9.jpg,Thai,2,3.0,50,50,50')
      output.expect(FILE, 'duplicate_id')
    }
    if (id % 4096 === 0) await output.flush()
  }
  return output.close({ seed, restaurants })
}
