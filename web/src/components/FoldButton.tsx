// The button that opens and closes a folded part of the page on a narrow screen (the page list,
// the conversations), saying which part and whether it is open.
import type { ReactNode } from "react";

export function FoldButton(props: { open: boolean; onToggle: () => void; controls: string; className: string; children: ReactNode }) {
  const { open, onToggle, controls, className, children } = props;
  return (
    <button type="button" className={className} aria-expanded={open} aria-controls={controls} onClick={onToggle}>
      {children}
    </button>
  );
}
