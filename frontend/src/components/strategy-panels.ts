import { type ComponentType, lazy } from 'react';
import type { RunView } from '../state/view-state.ts';

/**
 * What every strategy's panel gets: the whole run (steps, branches, strategy events) and the time
 * now. Whatever only one strategy needs (the session's todo list, going on, saving a document) the
 * panel reads itself, with useRunActions.
 */
export interface StrategyPanelProps {
  run: RunView;
  /** True while the run goes on (or waits); false once it ended. */
  running: boolean;
  now: Date;
}

/**
 * Panels that show a strategy's runs its own way (a plan board, a task graph…), by strategy name.
 * A run whose strategy has none shows the generic tree (RunTree); roa's runs show their steps.
 */
// Each loads when a run of its strategy is first shown: the first bundle carries none of them.
export const strategyPanels: Record<string, ComponentType<StrategyPanelProps>> = {
  plan_execute: lazy(() => import('./PlanPanel.tsx').then((module) => ({ default: module.PlanPanel }))),
  autonomous: lazy(() => import('./AutonomousPanel.tsx').then((module) => ({ default: module.AutonomousPanel }))),
  solver: lazy(() => import('./SolverPanel.tsx').then((module) => ({ default: module.SolverPanel }))),
  research: lazy(() => import('./TaskGraphPanel.tsx').then((module) => ({ default: module.TaskGraphPanel }))),
};
