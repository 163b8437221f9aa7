import { autonomous } from './autonomous/autonomous.ts';
import { chat } from './chat/chat.ts';
import { planExecute } from './plan_execute/plan-execute.ts';
import { research } from './research/research.ts';
import { roa } from './roa/roa.ts';
import { solver } from './solver/solver.ts';
import type { AnyStrategy } from './kernel/strategy.ts';

/**
 * Every strategy Stepwise runs: adding one is a folder under agent/, one under prompts/, and a
 * line here. Plain chat is one too (hidden from the picker).
 */
export const STRATEGIES: readonly AnyStrategy[] = [chat, roa, planExecute, autonomous, solver, research];
