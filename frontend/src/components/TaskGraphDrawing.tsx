import { Background, Controls, type Edge, Handle, type Node, type NodeChange, type NodeProps, Position, ReactFlow, useNodesState } from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import type { AgentTaskGraph } from '@stepwise/shared-types';
import { useCallback, useLayoutEffect, useMemo, useRef } from 'react';

type GraphStage = AgentTaskGraph['stages'][number];
type GraphTask = GraphStage['tasks'][number];

/** A task of the graph as drawn: "waiting" in place of "running" once the run has ended. */
export type DrawnTask = Omit<GraphTask, 'status'> & { status: GraphTask['status'] | 'waiting' };
/** A stage of the graph as drawn, its status shown the same way. */
export type DrawnStage = Omit<GraphStage, 'status' | 'tasks'> & { status: GraphStage['status'] | 'waiting'; tasks: DrawnTask[] };

const LANE_WIDTH = 230;
const COLUMN_GAP = 200;
const ROW_HEIGHT = 78;
const TOP = 40;

type TaskNode = Node<{ task: DrawnTask; followUp: boolean; onOpen: (id: string) => void }, 'task'>;
type LaneNode = Node<{ label: string }, 'lane'>;

/** A task: its id, title and status; a follow-up marked; the running one pulses. Enter or a click opens its work. */
function TaskNodeView({ data }: NodeProps<TaskNode>) {
  const { task, followUp, onOpen } = data;
  return (
    <>
      <Handle type="target" position={Position.Left} />
      <button
        type="button"
        className={`graph-node status-${task.status}`}
        data-testid="graph-node"
        data-task={task.id}
        data-status={task.status}
        onClick={() => onOpen(task.id)}
        aria-label={`Task ${task.id}, ${task.status}: ${task.title}. Open its work`}
      >
        <strong>{task.id}</strong> {task.title.length > 60 ? `${task.title.slice(0, 60)}…` : task.title}
        <br />
        <small>
          {task.agent.replace(/_/g, ' ')} · {task.status}
        </small>
        {followUp && <span className="badge follow-up">follow-up</span>}
      </button>
      <Handle type="source" position={Position.Right} />
    </>
  );
}

function LaneView({ data }: NodeProps<LaneNode>) {
  return <div className="graph-lane">{data.label}</div>;
}

const nodeTypes = { task: TaskNodeView, lane: LaneView };

/**
 * A research run's task graph, drawn: stages as lanes from left to right, each task a node placed
 * by how deep its dependencies inside the stage go, an edge per dependency (animated into a task
 * that runs). @xyflow/react draws it (pan, zoom, keyboard focus); the lane layout is computed here,
 * since stages as fixed lanes is what a general layered layout would not keep.
 */
export default function TaskGraphDrawing({ stages, followUps, onOpen }: { stages: DrawnStage[]; followUps: Set<string>; onOpen: (taskId: string) => void }) {
  // The panel re-renders often (a clock ticks): the graph is laid out again only when what it shows changed.
  const shape = JSON.stringify([stages, [...followUps].sort()]);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `shape` stands for what is drawn; the objects themselves are new at every render
  const layout = useMemo(() => {
    const nodes: Array<TaskNode | LaneNode> = [];
    const edges: Edge[] = [];
    let x = 0;
    for (const stage of stages) {
      const inStage = new Map(stage.tasks.map((task) => [task.id, task]));
      const depth = new Map<string, number>();
      const depthOf = (task: DrawnTask, seen: Set<string> = new Set()): number => {
        if (depth.has(task.id)) return depth.get(task.id)!;
        if (seen.has(task.id)) return 0;
        seen.add(task.id);
        const inner = task.depends_on.map((id) => inStage.get(id)).filter((dependency): dependency is DrawnTask => dependency !== undefined);
        const value = inner.length ? 1 + Math.max(...inner.map((dependency) => depthOf(dependency, seen))) : 0;
        depth.set(task.id, value);
        return value;
      };
      const columns = new Map<number, number>();
      let widest = 0;
      for (const task of stage.tasks) {
        const column = depthOf(task);
        const row = columns.get(column) ?? 0;
        columns.set(column, row + 1);
        widest = Math.max(widest, column);
        nodes.push({
          id: task.id,
          type: 'task',
          position: { x: x + column * COLUMN_GAP, y: TOP + row * ROW_HEIGHT },
          data: { task, followUp: followUps.has(task.id), onOpen },
          draggable: false,
        });
        for (const dependency of task.depends_on) {
          edges.push({ id: `${dependency}->${task.id}`, source: dependency, target: task.id, animated: task.status === 'running' });
        }
      }
      nodes.push({
        id: `lane-${stage.id}`,
        type: 'lane',
        position: { x, y: 0 },
        data: { label: `Stage ${stage.id} · ${stage.name}${stage.verdict ? ` · ${stage.verdict}` : ''}` },
        selectable: false,
        draggable: false,
        focusable: false,
      });
      x += LANE_WIDTH + widest * COLUMN_GAP;
    }
    return { nodes, edges };
  }, [shape, onOpen]);
  // React Flow hides a node it has not measured, and measures a node again only when its size
  // changes. A node given anew without its measured size (a status changed) could stay hidden for
  // good, so the flow is controlled: measurements come back through onNodesChange, and a new layout
  // keeps each node's measured size. Only measurements are taken: the drawing is not edited (a
  // selection is not kept, and the Delete key removes nothing). Nodes stay selectable all the
  // same: React Flow lets pointer events through only to nodes that are, and a click opens a task.
  const [nodes, setNodes, applyChanges] = useNodesState<TaskNode | LaneNode>(layout.nodes);
  const onNodesChange = useCallback(
    (changes: NodeChange<TaskNode | LaneNode>[]) => applyChanges(changes.filter((change) => change.type === 'dimensions')),
    [applyChanges],
  );
  const applied = useRef(layout);
  // Before the browser paints, so the nodes and the edges of one layout show together.
  useLayoutEffect(() => {
    if (applied.current === layout) return;
    applied.current = layout;
    setNodes((current) => {
      const measured = new Map(current.map((node) => [node.id, node.measured]));
      return layout.nodes.map((node) => ({ ...node, measured: measured.get(node.id) }));
    });
  }, [layout, setNodes]);
  return (
    <div className="graph-view" data-testid="graph-view">
      <ReactFlow
        nodes={nodes}
        edges={layout.edges}
        onNodesChange={onNodesChange}
        deleteKeyCode={null}
        nodeTypes={nodeTypes}
        fitView
        minZoom={0.3}
        nodesConnectable={false}
        proOptions={{ hideAttribution: true }}
        aria-label="The task graph"
      >
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
