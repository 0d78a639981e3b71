// The Atelier CSVs and how each maps to its table, in load order (referenced tables first).
// Types (services/kit/src/etl/column-types.js), keys and references are checked by the kit's loader.

// Some photo rows carry a 5th column repeating thumbnail_url; that copy is dropped (and counted).
function dropStrayPhotoColumn (fields, header) {
  if (fields.length === header.length + 1 && fields[fields.length - 1] === fields[fields.length - 2]) {
    fields.pop()
    return 'stray_column_dropped'
  }
  return null
}

export const tables = [
  {
    file: 'product.csv',
    table: 'products',
    columns: { id: 'id', name: 'text', slogan: 'text', description: 'text', category: 'text', default_price: 'price' },
    primaryKey: 'id',
    rank: 'seq'
  },
  {
    file: 'styles.csv',
    table: 'styles',
    columns: {
      id: 'id', product_id: 'id', name: 'text', sale_price: 'price?', original_price: 'price', default_style: 'bool'
    },
    aliases: { product_id: ['productId', 'current_product_id'] },
    primaryKey: 'id',
    references: { product_id: 'products' }
  },
  {
    file: 'photos.csv',
    table: 'photos',
    columns: { id: 'id', style_id: 'id', url: 'text?', thumbnail_url: 'text?' },
    aliases: { style_id: ['styleId'] },
    primaryKey: 'id',
    references: { style_id: 'styles' },
    fix: dropStrayPhotoColumn
  },
  {
    file: 'skus.csv',
    table: 'skus',
    columns: { id: 'id', style_id: 'id', size: 'text', quantity: 'count' },
    aliases: { style_id: ['styleId'] },
    primaryKey: 'id',
    references: { style_id: 'styles' }
  },
  {
    file: 'features.csv',
    table: 'features',
    columns: { id: 'id', product_id: 'id', feature: 'text', value: 'text?' },
    aliases: { product_id: ['productId', 'current_product_id'] },
    primaryKey: 'id',
    references: { product_id: 'products' }
  },
  {
    file: 'related.csv',
    table: 'related',
    columns: { id: 'id', product_id: 'id', related_product_id: 'id' },
    aliases: { product_id: ['current_product_id', 'productId'] },
    primaryKey: 'id',
    references: { product_id: 'products', related_product_id: 'products' }
  }
]
