/** Text the agent wrote for itself (reasoning, observations): shown exactly as written, never as Markdown. */
export function AgentText({ text }: { text: string }) {
  return <p className="agent-text">{text}</p>;
}
