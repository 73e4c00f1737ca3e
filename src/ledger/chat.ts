/** One message of an API session's history. */
export interface ChatMessage {
  role: "user" | "assistant";
  content: string;
}
