/**
 * Memory search: full-text search (MiniSearch) over the caller's board cards, task results and
 * run results, for the dashboard's `/api/memory/search`.
 * @module
 */
export type { CardSource, MemoryCard } from "./card_source.ts";
export type { MemoryKind } from "./documents.ts";
export {
  CORPUS_LIMITS,
  HITS_LIMIT,
  type MemoryHit,
  MemorySearch,
  type MemorySearchOptions,
  type MemorySearchRequest,
  MemorySearchRequestSchema,
  QUERY_LIMIT,
  QUERY_TERMS_LIMIT,
} from "./memory_search.ts";
export { SNIPPET_LENGTH } from "./snippet.ts";
