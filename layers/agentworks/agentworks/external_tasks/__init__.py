"""External agents' tasks a call or workflow step waits for (issue 30 §2): the step waits
on a Step Functions task token while the tick reads the task, so a long wait costs no
invocation and no state transition."""
