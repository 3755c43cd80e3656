from agentworks.messaging.models import RegisterAgent, SendMessage


def test_register_send_read_reply(stack):
    svc = stack.services
    admin = stack.principal(stack.admin_token)
    worker_conn = svc.identity.create_connection(admin, "worker")
    reviewer_conn = svc.identity.create_connection(admin, "reviewer")
    worker = stack.principal(worker_conn.token)
    reviewer = stack.principal(reviewer_conn.token)
    svc.directory.register(worker, RegisterAgent(agent_name="worker"))
    svc.directory.register(reviewer, RegisterAgent(agent_name="Reviewer", purpose="reviews"))
    receipt = svc.messaging.send(
        worker, SendMessage(agent_name="worker", target="agent:reviewer", message="Ready")
    )
    assert receipt.receipt == "stored"
    page = svc.messaging.read(reviewer, agent_name="reviewer", after="0")
    assert [m.body for m in page.messages] == ["Ready"]
    first = page.messages[0]
    assert first.sender == "agent:worker"
    reply = svc.messaging.send(
        reviewer, SendMessage(agent_name="reviewer", inbox_id=first.reply_address, message="Got it")
    )
    back = svc.messaging.read(worker, inbox_id=receipt.inbox_id, agent_name="worker")
    assert [m.body for m in back.messages] == ["Got it"]
    assert back.messages[0].message_id == reply.message_id
    ack = svc.messaging.ack(reviewer, first.message_id, "admitted")
    assert ack.receipt == "admitted"
    state = svc.messaging.inbox_state(worker, receipt.inbox_id)
    assert state.delivery_records[0].receipt == "admitted"
