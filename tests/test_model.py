import pytest

from kafka_rebalance.errors import InputError
from kafka_rebalance.model import TopicPartition, parse_group_scenario


def test_parse_vector_layout_racks():
    sc = parse_group_scenario(
        {
            "topics": [
                {"name": "t", "partitions": 3, "rf": 2, "racks": ["a", "b", "c"], "offset": 1}
            ],
            "members": [
                {"id": "c0", "topics": ["t"], "owned": [["t", 1]], "generation": 2, "rack": "a"}
            ],
            "rounds": 2,
        }
    )
    t = sc.spec.topics["t"]
    assert t.racks_of(0) == frozenset({"b", "c"})
    assert t.racks_of(2) == frozenset({"a", "b"})
    m = sc.spec.members[0]
    assert m.owned == (TopicPartition("t", 1),) and m.generation == 2 and sc.rounds == 2


@pytest.mark.parametrize(
    "doc,field",
    [
        ({"topics": [{"name": "t", "partitions": -1}], "members": []}, "topics[0].partitions"),
        (
            {"topics": [{"name": "t", "partitions": 1, "colour": 1}], "members": []},
            "topics[0].colour",
        ),
        (
            {"topics": [], "members": [{"id": "a", "topics": []}, {"id": "a", "topics": []}]},
            "members[1].id",
        ),
        (
            {"topics": [], "members": [{"id": "a", "topics": [], "owned": [["t", -2]]}]},
            "members[0].owned[0][1]",
        ),
        ({"topics": [], "members": [], "rounds": 0}, "rounds"),
    ],
)
def test_bad_input_names_field(doc, field):
    with pytest.raises(InputError) as err:
        parse_group_scenario(doc)
    assert err.value.field == field
    assert field in str(err.value)
