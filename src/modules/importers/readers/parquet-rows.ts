import {
  type AsyncBuffer,
  type ColumnMetaData,
  type Compressors,
  type DecodedArray,
  type Encoding,
  type FileMetaData,
  type PageHeader,
  parquetSchema,
  type RowGroup,
  type SchemaTree,
} from 'hyparquet';
import { parquetHeader } from 'hyparquet/src/column.js';
import { convert, convertWithDictionary, DEFAULT_PARSERS } from 'hyparquet/src/convert.js';
import { decompressPage, readDataPage, readDataPageV2 } from 'hyparquet/src/datapage.js';
import { readPlain } from 'hyparquet/src/plain.js';
import { getMaxDefinitionLevel, getTreePath, isListLike, isMapLike } from 'hyparquet/src/schema.js';

/** hyparquet's column decoder and decoded page (its index does not export these types). */
type ColumnDecoder = Parameters<typeof readDataPage>[2];
type DataPage = ReturnType<typeof readDataPage>;

/**
 * Rows of a row group assembled one at a time from its leaf columns' definition and repetition levels.
 *
 * hyparquet turns every nested column of a row group into JavaScript objects at once (a list per leaf and
 * row, then an object per struct and row for the whole group) before the first row can be read: for
 * Overture's places that burst of objects, all alive together, was most of an import's time, mostly in the
 * garbage collector. Here a row group's pages are decoded by hyparquet's own page decoders into flat levels
 * and values (strings, numbers, GeoParquet geometry, converted as hyparquet converts them), and each row is
 * built from them when it is asked for, in the shape hyparquet gives it (`null` for an absent struct, list
 * or map, `[]` for an empty list): the reader then holds one row group's values and one row's objects.
 *
 * Handles structs, standard three-level lists and maps, nested in any way; a schema with anything else
 * (two-level lists, repeated fields without a LIST annotation, VARIANT) answers null from `rowAssembler`
 * and is read by hyparquet as before.
 */

/** One decoded leaf column of a row group: a definition and repetition level per entry, a value per defined entry. */
interface Leaf {
  path: string;
  maxDef: number;
  def: Uint8Array;
  rep: Uint8Array;
  values: DecodedArray;
  /** Entries, and values, taken by the rows assembled so far. */
  at: number;
  valueAt: number;
}

type Node =
  | { kind: 'leaf'; name: string; leaf: Leaf }
  | { kind: 'struct'; name: string; def: number; leaves: Leaf[]; children: Node[] }
  | { kind: 'list'; name: string; def: number; leaves: Leaf[]; element: Node; repeat: number }
  | { kind: 'map'; name: string; def: number; leaves: Leaf[]; key: Node; value: Node; repeat: number };

class Unsupported extends Error {}

export interface RowAssembler {
  /** Decodes one row group's chosen columns from `file` (which holds their bytes) and answers its rows in order. */
  rows(file: AsyncBuffer, group: RowGroup): Promise<Iterable<Record<string, unknown>>>;
}

/**
 * An assembler of the top-level `columns` of files with this `metadata`, or null when their schema holds a
 * shape this assembler does not build (then hyparquet's `parquetReadObjects` reads them).
 */
export function rowAssembler(
  metadata: FileMetaData,
  columns: readonly string[],
  options: { compressors?: Compressors; utf8?: boolean },
): RowAssembler | null {
  const tree = parquetSchema(metadata);
  const tops = tree.children.filter((c) => columns.includes(c.element.name));
  try {
    // A dry run on empty leaves: is every chosen column of a shape built here?
    for (const top of tops) buildNode(top, 0, 0, new Map(), true);
  } catch (error) {
    if (error instanceof Unsupported) return null;
    throw error;
  }
  return {
    async rows(file, group) {
      const leaves = new Map<string, Leaf>();
      for (const chunk of group.columns) {
        const meta = chunk.meta_data;
        if (!meta || !columns.includes(meta.path_in_schema[0]!)) continue;
        const path = meta.path_in_schema.join('.');
        leaves.set(path, await decodeLeaf(file, meta, getTreePath(tree, meta.path_in_schema), options));
      }
      const nodes = tops.map((top) => buildNode(top, 0, 0, leaves, false));
      return assembled(nodes, Number(group.num_rows), [...leaves.values()]);
    },
  };
}

function* assembled(nodes: Node[], count: number, leaves: Leaf[]): Generator<Record<string, unknown>> {
  for (let i = 0; i < count; i++) {
    const row: Record<string, unknown> = {};
    for (const node of nodes) row[node.name] = nodeValue(node);
    yield row;
  }
  for (const leaf of leaves) {
    if (leaf.at !== leaf.def.length)
      throw new Error(`parquet column ${leaf.path}: ${leaf.def.length - leaf.at} entries left after the row group's rows`);
  }
}

/**
 * The node of schema element `tree`, whose parent is defined at definition level `parentDef` and repeated at
 * level `parentRepeat`. `def` of a node: the definition level from which it is present (not null).
 */
function buildNode(tree: SchemaTree, parentDef: number, parentRepeat: number, leaves: Map<string, Leaf>, dry: boolean): Node {
  const element = tree.element;
  const name = element.name;
  if (element.repetition_type === 'REPEATED') throw new Unsupported(`repeated field ${tree.path.join('.')} outside a LIST or MAP`);
  if (element.logical_type?.type === 'VARIANT') throw new Unsupported(`VARIANT column ${tree.path.join('.')}`);
  const def = parentDef + (element.repetition_type === 'OPTIONAL' ? 1 : 0);
  if (tree.children.length === 0) {
    const path = tree.path.join('.');
    const leaf = dry ? emptyLeaf(path) : leaves.get(path);
    if (!leaf) throw new Error(`parquet column ${path} missing from the row group`);
    return { kind: 'leaf', name, leaf };
  }
  if (isListLike(tree)) {
    const repeated = tree.children[0]!;
    if (repeated.children.length !== 1) throw new Unsupported(`two-level list ${tree.path.join('.')}`);
    const element = buildNode(repeated.children[0]!, def + 1, parentRepeat + 1, leaves, dry);
    return { kind: 'list', name, def, leaves: leavesOf(element), element, repeat: parentRepeat + 1 };
  }
  if (isMapLike(tree)) {
    const entry = tree.children[0]!;
    const keyTree = entry.children.find((c) => c.element.name === 'key');
    const valueTree = entry.children.find((c) => c.element.name === 'value');
    if (!keyTree || !valueTree) throw new Unsupported(`map ${tree.path.join('.')} without key and value`);
    const key = buildNode(keyTree, def + 1, parentRepeat + 1, leaves, dry);
    const value = buildNode(valueTree, def + 1, parentRepeat + 1, leaves, dry);
    return { kind: 'map', name, def, leaves: [...leavesOf(key), ...leavesOf(value)], key, value, repeat: parentRepeat + 1 };
  }
  if (element.converted_type === 'LIST' || element.converted_type === 'MAP')
    throw new Unsupported(`${element.converted_type} ${tree.path.join('.')} of an unusual layout`);
  const children = tree.children.map((c) => buildNode(c, def, parentRepeat, leaves, dry));
  return { kind: 'struct', name, def, leaves: children.flatMap(leavesOf), children };
}

const leavesOf = (node: Node): Leaf[] => (node.kind === 'leaf' ? [node.leaf] : node.leaves);

const emptyLeaf = (path: string): Leaf => ({
  path,
  maxDef: 0,
  def: new Uint8Array(0),
  rep: new Uint8Array(0),
  values: [],
  at: 0,
  valueAt: 0,
});

/** The value of `node` in the current row (or list element), taking its leaves' entries. */
function nodeValue(node: Node): unknown {
  if (node.kind === 'leaf') {
    const leaf = node.leaf;
    return leaf.def[leaf.at++] === leaf.maxDef ? leaf.values[leaf.valueAt++] : null;
  }
  const first = node.leaves[0]!;
  const def = first.def[first.at]!;
  if (def < node.def) return skip(node, null);
  if (node.kind === 'struct') {
    const out: Record<string, unknown> = {};
    for (const child of node.children) out[child.name] = nodeValue(child);
    return out;
  }
  // A list or map present but empty: one entry per leaf, defined up to the list and not to its repeated group.
  if (def === node.def) return skip(node, node.kind === 'list' ? [] : {});
  if (node.kind === 'list') {
    const out: unknown[] = [];
    do out.push(nodeValue(node.element));
    while (first.at < first.rep.length && first.rep[first.at] === node.repeat);
    return out;
  }
  const out: Record<string, unknown> = {};
  do {
    const key = nodeValue(node.key);
    const value = nodeValue(node.value);
    out[String(key)] = value === undefined ? null : value;
  } while (first.at < first.rep.length && first.rep[first.at] === node.repeat);
  return out;
}

/** A null or empty node: each of its leaves holds one entry for it, with no value. */
function skip<T>(node: Node, value: T): T {
  if (node.kind !== 'leaf') for (const leaf of node.leaves) leaf.at++;
  return value;
}

/** The levels and values of one column chunk, every page decoded and converted as hyparquet does. */
async function decodeLeaf(
  file: AsyncBuffer,
  meta: ColumnMetaData,
  schemaPath: SchemaTree[],
  options: { compressors?: Compressors; utf8?: boolean },
): Promise<Leaf> {
  const start = Number(meta.dictionary_page_offset || meta.data_page_offset);
  const bytes = await file.slice(start, start + Number(meta.total_compressed_size));
  const decoder: ColumnDecoder = {
    pathInSchema: meta.path_in_schema,
    type: meta.type,
    element: schemaPath.at(-1)!.element,
    schemaPath,
    codec: meta.codec,
    parsers: DEFAULT_PARSERS,
    ...(options.compressors ? { compressors: options.compressors } : {}),
    ...(options.utf8 !== undefined ? { utf8: options.utf8 } : {}),
  };
  const maxDef = getMaxDefinitionLevel(schemaPath);
  const entries = Number(meta.num_values);
  const def = new Uint8Array(entries);
  const rep = new Uint8Array(entries);
  const pages: DecodedArray[] = [];
  let filled = 0;
  let dictionary: DecodedArray | undefined;
  const reader = { view: new DataView(bytes), offset: 0 };
  while (filled < entries && reader.offset < bytes.byteLength) {
    const header = parquetHeader(reader);
    const compressed = new Uint8Array(bytes, reader.offset, header.compressed_page_size);
    reader.offset += header.compressed_page_size;
    if (header.type === 'DICTIONARY_PAGE') {
      const page = decompressPage(compressed, Number(header.uncompressed_page_size), decoder.codec, decoder.compressors);
      const view = { view: new DataView(page.buffer, page.byteOffset, page.byteLength), offset: 0 };
      dictionary = convert(readPlain(view, decoder.type, header.dictionary_page_header!.num_values, decoder.element.type_length), decoder);
      continue;
    }
    const data = dataPage(header, compressed, decoder);
    if (!data) continue;
    const { page, encoding, count } = data;
    const { definitionLevels, repetitionLevels } = page;
    if (definitionLevels?.length) def.set(definitionLevels, filled);
    else def.fill(maxDef, filled, filled + count);
    if (repetitionLevels.length) rep.set(repetitionLevels, filled);
    pages.push(convertWithDictionary(page.dataPage, dictionary, encoding, decoder));
    filled += count;
  }
  if (filled !== entries) throw new Error(`parquet column ${meta.path_in_schema.join('.')}: ${filled} of ${entries} entries decoded`);
  return {
    path: meta.path_in_schema.join('.'),
    maxDef,
    def,
    rep,
    values: pages.length === 1 ? pages[0]! : joined(pages),
    at: 0,
    valueAt: 0,
  };
}

/** A data page's levels and values with its encoding and entry count; undefined for another kind of page. */
function dataPage(
  header: PageHeader,
  compressed: Uint8Array,
  decoder: ColumnDecoder,
): { page: DataPage; encoding: Encoding; count: number } | undefined {
  if (header.type === 'DATA_PAGE') {
    const h = header.data_page_header!;
    const raw = decompressPage(compressed, Number(header.uncompressed_page_size), decoder.codec, decoder.compressors);
    return { page: readDataPage(raw, h, decoder), encoding: h.encoding, count: h.num_values };
  }
  if (header.type === 'DATA_PAGE_V2') {
    const h = header.data_page_header_v2!;
    return { page: readDataPageV2(compressed, header, decoder), encoding: h.encoding, count: h.num_values };
  }
  return undefined;
}

function joined(pages: DecodedArray[]): unknown[] {
  const out: unknown[] = [];
  for (const page of pages) for (let i = 0; i < page.length; i++) out.push(page[i]);
  return out;
}
