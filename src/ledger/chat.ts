/** One message of an API session's history. */
export interface ChatMessage {
  /** Who said it: the caller (`user`) or the model (`assistant`). */
  role: "user" | "assistant";
  /** What was said. */
  content: string;
}
