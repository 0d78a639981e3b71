// A deterministic generator of Atelier-shaped CSVs at any scale, with the real data set's quirks.
// Full scale (--products 1000011) is the size of the real set: ~1.96M styles, ~5.66M photos,
// ~11.3M SKUs, ~2.2M features, ~4.5M related rows, ~2 GB.
//   node services/product/src/cli.js generate --out DIR --products N [--seed S]
// manifest.json lists, per file, the rows written and exactly how many the loader must reject by
// reason (and repair by kind), so a test can hold the loader to it.
import { IdSet, prng, createOutput } from '@suite/kit/etl'

const ADJECTIVES = [
  'Camo', 'Bright', 'Classic', 'Slim', 'Heritage', 'Morning', 'Urban', 'Alpine', 'Coastal', 'Vintage', 'Sleek', 'Rugged'
]
const NOUNS = [
  'Onesie', 'Jacket', 'Sneakers', 'Joggers', 'Hat', 'Sunglasses', 'Backpack', 'Scarf', 'Boots', 'Hoodie', 'Shorts',
  'Blazer'
]
const CATEGORIES = [
  'Jackets', 'Accessories', 'Pants', 'Kicks', 'Dress Shoes', 'Shirts', 'Heels', 'Suit', 'Basketball Shoes', 'Cap'
]
const COLORS = [
  'Forest Green', 'Black', 'Desert Brown', 'Tan', 'Ocean Blue', 'White', 'Red', 'Maroon', 'Goldenrod', 'Cream'
]
const FEATURES = [
  'Fabric', 'Buttons', 'Lenses', 'UV Protection', 'Sole', 'Material', 'Stitching', 'Frame', 'Mid-Sole', 'Cut'
]
const VALUES = [
  'Canvas', 'Brass', 'Ultrasheen', 'Rubber', 'FullControlSkin', '100% Cotton', 'Double Stitch', 'Blend', 'Skinny'
]
const SIZES = [
  'XS', 'S', 'M', 'L', 'XL', 'XXL', '7', '7.5', '8', '8.5', '9', '9.5', '10', '10.5', '11', '12', 'One Size'
]

// Rows per parent, as weights of 0, 1, 2, …, tuned to the real set's ratios.
const STYLES_PER_PRODUCT = [0.02, 0.30, 0.42, 0.22, 0.04]
const PHOTOS_PER_STYLE = [0.06, 0.12, 0.20, 0.25, 0.23, 0.14]
const SKUS_PER_STYLE = [0.03, 0.01, 0.02, 0.05, 0.08, 0.16, 0.20, 0.25, 0.20]
const FEATURES_PER_PRODUCT = [0.10, 0.20, 0.30, 0.25, 0.15]

/** Writes the six CSVs and manifest.json into `out`; resolves to the manifest. */
export async function generate ({ out, products, seed = 1 }) {
  const rand = prng(seed)
  const int = (n) => Math.floor(rand() * n)
  // Each quirk also appears once at a fixed product index (11 to 19), so small sets have them all.
  const chance = (p) => rand() < p
  const pick = (list) => list[int(list.length)]
  const count = (weights) => {
    let r = rand()
    for (let i = 0; i < weights.length; i++) if ((r -= weights[i]) < 0) return i
    return weights.length - 1
  }

  const output = await createOutput(out, {
    'product.csv': 'id,name,slogan,description,category,default_price',
    'styles.csv': 'id,productId,name,sale_price,original_price,default_style',
    'photos.csv': 'id,styleId,url,thumbnail_url',
    'skus.csv': 'id,styleId,size,quantity',
    'features.csv': 'id,product_id,feature,value',
    'related.csv': 'id,current_product_id,related_product_id'
  })
  const { row, expect, flush } = output
  const quote = (s) => `"${s.replaceAll('"', '""')}"`
  const price = (n) => (chance(0.5) ? String(n) : `${n}.00`)
  const url = (w) => `https://images.unsplash.com/photo-${1500000000000 + int(99999999999)}-` +
    `${int(0xffffffff).toString(16).padStart(8, '0')}${int(0xffff).toString(16)}` +
    `?ixlib=rb-1.2.1&ixid=eyJhcHBfaWQiOjEyMDd9&auto=format&fit=crop&w=${w}&q=80`

  // Products first, remembering which ids exist (ids have gaps) so references can be judged.
  const exists = new IdSet()
  let productId = 0
  let styleId = 0
  let photoId = 0
  let skuId = 0
  let featureId = 0
  let relatedId = 0
  const productIds = []
  for (let i = 0; i < products; i++) {
    productId++
    if (chance(0.001)) productId++ // a gap in the ids
    const name = `${pick(ADJECTIVES)} ${pick(NOUNS)}`
    const slogan = chance(0.05) ? quote(`Don't just "wear" it, live it, every day`) : 'Blend in to your crowd'
    const description = chance(0.05)
      ? quote('The So Fatigues will wake you up and fit you in.\n' +
        `This "high energy" piece, with a twist, is ${pick(COLORS).toLowerCase()}`)
      : `So fatigues will wake you up and fit you in the crowd ${i}`
    const id = productId
    row('product.csv', `${id},${name},${slogan},${description},${pick(CATEGORIES)},${price(10 + int(990))}`)
    exists.add(id)
    productIds.push(id)
    if (chance(1 / 20000) || i === 11) {
      row('product.csv', `${id},${name} again,x,y,z,1`)
      expect('product.csv', 'duplicate_id')
    }
    if (chance(1 / 20000) || i === 12) {
      row('product.csv', `x${id},${name},x,y,z,1`)
      expect('product.csv', 'invalid_id')
    }
    // A row cut short; its id is used by nothing else, so it becomes a gap.
    if (chance(1 / 20000) || i === 13) {
      productId++
      row('product.csv', `${productId},${name},cut short`)
      expect('product.csv', 'column_count')
    }

    const styles = count(STYLES_PER_PRODUCT)
    for (let s = 0; s < styles; s++) {
      styleId++
      const original = 20 + int(980)
      const sale = chance(0.6) ? 'null' : price(Math.max(1, original - 10 - int(Math.min(original - 1, 100))))
      row('styles.csv',
        `${styleId},${id},${pick(COLORS)} & ${pick(COLORS)},${sale},${price(original)},${s === 0 ? 1 : 0}`)
      const photos = count(PHOTOS_PER_STYLE)
      for (let p = 0; p < photos; p++) {
        photoId++
        const thumb = url(300)
        if (chance(1 / 5000) || (i === 14 && p === 0)) {
          row('photos.csv', `${photoId},${styleId},${url(668)},${thumb},${thumb}`)
          expect('photos.csv', 'stray_column_dropped', 'fixes')
        } else {
          row('photos.csv', `${photoId},${styleId},${url(668)},${thumb}`)
        }
      }
      const skus = count(SKUS_PER_STYLE)
      for (let k = 0; k < skus; k++) {
        skuId++
        row('skus.csv', `${skuId},${styleId},${pick(SIZES)},${int(60)}`)
      }
      if (chance(1 / 50000) || (i === 15 && s === 0)) {
        skuId++
        row('skus.csv', `${skuId},${styleId},M,-1`)
        expect('skus.csv', 'invalid_quantity')
      }
    }
    // A style of a product that does not exist; its id is never used by photos or SKUs.
    if (chance(1 / 10000) || i === 16) {
      styleId++
      row('styles.csv', `${styleId},${id + 50_000_000},Lost,null,10,1`)
      expect('styles.csv', 'product_id_missing')
    }
    if (chance(1 / 50000) || i === 17) {
      styleId++
      row('styles.csv', `${styleId},${id},Odd,null,10,yes`)
      expect('styles.csv', 'invalid_default_style')
    }
    if (chance(1 / 20000) || i === 18) {
      photoId++
      row('photos.csv', `${photoId},${styleId + 50_000_000},${url(668)},${url(300)}`)
      expect('photos.csv', 'style_id_missing')
    }
    if (chance(1 / 20000) || i === 19) {
      skuId++
      row('skus.csv', `${skuId},${styleId + 50_000_000},S,3`)
      expect('skus.csv', 'style_id_missing')
    }

    const features = count(FEATURES_PER_PRODUCT)
    for (let f = 0; f < features; f++) {
      featureId++
      row('features.csv', `${featureId},${id},${pick(FEATURES)},${chance(0.1) ? 'null' : quote(pick(VALUES))}`)
    }
    await flush()
  }

  // Related rows point anywhere in the id range: into gaps too, and sometimes at 0, as in the real set.
  for (const id of productIds) {
    const related = 1 + int(8)
    for (let r = 0; r < related; r++) {
      relatedId++
      const target = chance(1 / 2000) ? 0 : 1 + int(productId)
      row('related.csv', `${relatedId},${id},${target}`)
      if (target === 0) expect('related.csv', 'invalid_related_product_id')
      else if (!exists.has(target)) expect('related.csv', 'related_product_id_missing')
    }
    if (relatedId % 10000 === 0) await flush()
  }

  return output.close({ seed, products })
}
