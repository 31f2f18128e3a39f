"""Tasks: the YAML files under tasks/, their goal-state predicates, and starting an episode of one.

Load with `load_task` / `load_tasks`, resolve a seed with `Task.instantiate`, check with `goal_holds`.
"""

from agent_eval.task.loading import load_task, load_tasks
from agent_eval.task.predicates import goal_holds
from agent_eval.task.schema import OracleStep, Predicate, Start, Task, TaskInstance
from agent_eval.task.start import start_episode

__all__ = [
    "OracleStep",
    "Predicate",
    "Start",
    "Task",
    "TaskInstance",
    "goal_holds",
    "load_task",
    "load_tasks",
    "start_episode",
]
