"""A tiny generated world of people and facts, for runs that need no downloads.

Every fact is a sentence about a person ("Mara lives in Lisbon.", "张伟住在北京。");
premises, contexts, hypotheses and questions are built from the facts, so that
labels and answer spans are known exactly. Deterministic in the seed. The
world exists in two languages (`ENGLISH`, `CHINESE`): the same facts, each
language's names, values, templates and the way it joins sentences.
"""

import dataclasses
import random


@dataclasses.dataclass(frozen=True)
class Relation:
    """fact: "{name} lives in {value}."; question: "Where does {name} live?";
    negated: "{name} does not live in {value}."; unknown: a sentence about
    something no fact says (for neutral hypotheses); values: the value pool."""

    fact: str
    question: str
    negated: str
    unknown: str
    values: tuple


@dataclasses.dataclass(frozen=True)
class Lexicon:
    names: tuple
    relations: dict
    joiner: str  # between the sentences of a paragraph


ENGLISH = Lexicon(
    names=("Mara", "Tomas", "Ines", "Oskar", "Lena", "Rafael", "Nora", "Felix", "Ada", "Bruno",
           "Clara", "Dario", "Elsa", "Goran", "Hana", "Ivo", "Julia", "Karel", "Lucia", "Milo"),
    relations={
        "city": Relation("{name} lives in {value}.", "Where does {name} live?",
                         "{name} does not live in {value}.", "{name} was born in winter.",
                         ("Lisbon", "Oslo", "Porto", "Vienna", "Krakow", "Dublin", "Seville",
                          "Turin", "Ghent", "Bergen", "Lyon", "Malmo")),
        "job": Relation("{name} works as a {value}.", "What does {name} work as?",
                        "{name} does not work as a {value}.", "{name} likes old films.",
                        ("baker", "pilot", "doctor", "teacher", "painter", "farmer", "sailor",
                         "tailor", "nurse", "chemist")),
        "animal": Relation("{name} owns a {value}.", "Which animal does {name} own?",
                           "{name} does not own a {value}.", "{name} can swim well.",
                           ("cat", "dog", "horse", "parrot", "goat", "rabbit")),
        "color": Relation("The favourite colour of {name} is {value}.",
                          "What is the favourite colour of {name}?",
                          "The favourite colour of {name} is not {value}.",
                          "{name} has two brothers.",
                          ("red", "blue", "green", "yellow", "black", "white")),
    },
    joiner=" ")

CHINESE = Lexicon(
    names=("张伟", "李娜", "王芳", "刘洋", "陈静", "杨磊", "赵敏", "黄勇", "周婷", "吴刚",
           "徐丽", "孙强", "马超", "朱琳", "胡军", "郭华", "林峰", "何雪", "高鹏", "罗佳"),
    relations={
        "city": Relation("{name}住在{value}。", "{name}住在哪里？", "{name}不住在{value}。",
                         "{name}是冬天出生的。",
                         ("北京", "上海", "广州", "深圳", "成都", "杭州", "南京", "武汉", "西安",
                          "重庆", "天津", "苏州")),
        "job": Relation("{name}是一名{value}。", "{name}的职业是什么？", "{name}不是{value}。",
                        "{name}喜欢看老电影。",
                        ("医生", "教师", "厨师", "律师", "护士", "司机", "画家", "农民", "记者",
                         "工程师")),
        "animal": Relation("{name}养了一只{value}。", "{name}养了什么动物？",
                           "{name}没有养{value}。", "{name}很会游泳。",
                           ("猫", "狗", "兔子", "鹦鹉", "乌龟", "金鱼")),
        "color": Relation("{name}最喜欢的颜色是{value}。", "{name}最喜欢什么颜色？",
                          "{name}最喜欢的颜色不是{value}。", "{name}有两个哥哥。",
                          ("红色", "蓝色", "绿色", "黄色", "黑色", "白色")),
    },
    joiner="")


@dataclasses.dataclass(frozen=True)
class Fact:
    name: str
    relation: str
    value: str
    lexicon: Lexicon = ENGLISH

    @property
    def sentence(self):
        return self.lexicon.relations[self.relation].fact.format(name=self.name, value=self.value)

    @property
    def question(self):
        return self.lexicon.relations[self.relation].question.format(name=self.name)

    @property
    def negated(self):
        """The sentence that denies this fact."""
        return self.lexicon.relations[self.relation].negated.format(name=self.name,
                                                                    value=self.value)


def random_fact(rng, name=None, relation=None, lexicon=ENGLISH):
    name = name or rng.choice(lexicon.names)
    relation = relation or rng.choice(sorted(lexicon.relations))
    return Fact(name, relation, rng.choice(lexicon.relations[relation].values), lexicon)


def paragraph(rng, num_people=3, facts_per_person=2, lexicon=ENGLISH):
    """A list of facts about `num_people` different people, shuffled."""
    facts = []
    for name in rng.sample(lexicon.names, num_people):
        for relation in rng.sample(sorted(lexicon.relations), facts_per_person):
            facts.append(random_fact(rng, name, relation, lexicon))
    rng.shuffle(facts)
    return facts


def _other_value(rng, fact, facts):
    mentioned = {f.value for f in facts}
    others = [v for v in fact.lexicon.relations[fact.relation].values if v not in mentioned]
    return Fact(fact.name, fact.relation, rng.choice(others), fact.lexicon)


def entailment_pairs(seed, count, lexicon=ENGLISH):
    """(premise, hypothesis, entailed) triples.

    Entailed: the hypothesis is one of the premise's facts. Not entailed,
    alternately: the hypothesis denies one of them, or changes its value to
    one the premise never mentions.
    """
    rng = random.Random(seed)
    out = []
    for i in range(count):
        facts = paragraph(rng, num_people=2, facts_per_person=2, lexicon=lexicon)
        fact = rng.choice(facts)
        if i % 2 == 0:
            hypothesis = fact.sentence
        elif i % 4 == 1:
            hypothesis = fact.negated
        else:
            hypothesis = _other_value(rng, fact, facts).sentence
        out.append((lexicon.joiner.join(f.sentence for f in facts), hypothesis, i % 2 == 0))
    return out


NLI_LABELS = ("entailment", "neutral", "contradiction")


def nli_triples(seed, count, lexicon=CHINESE):
    """(premise, hypothesis, label) with three labels, in turn: "entailment" (one
    of the premise's facts), "neutral" (about the premise's people, on nothing
    it says), "contradiction" (a fact denied, or given another value)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        facts = paragraph(rng, num_people=2, facts_per_person=2, lexicon=lexicon)
        fact = rng.choice(facts)
        label = NLI_LABELS[i % 3]
        if label == "entailment":
            hypothesis = fact.sentence
        elif label == "neutral":
            hypothesis = lexicon.relations[fact.relation].unknown.format(name=fact.name)
        else:
            hypothesis = fact.negated if rng.random() < 0.5 else \
                _other_value(rng, fact, facts).sentence
        out.append((lexicon.joiner.join(f.sentence for f in facts), hypothesis, label))
    return out


def qa_paragraphs(seed, count, questions_per_paragraph=2, unanswerable_share=0.0,
                  lexicon=ENGLISH):
    """`count` (context, questions) pairs; each question is
    (text, answer or None, answer's character start or -1).

    A context states three of the four relations, each once, about two or
    three people. Unanswerable questions ask for the relation it leaves out.
    """
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        names = rng.sample(lexicon.names, rng.choice((2, 3)))
        relations = rng.sample(sorted(lexicon.relations), 3)
        facts = [random_fact(rng, rng.choice(names), r, lexicon) for r in relations]
        context = lexicon.joiner.join(f.sentence for f in facts)
        missing = (set(lexicon.relations) - set(relations)).pop()
        questions = []
        for fact in rng.sample(facts, questions_per_paragraph):
            if rng.random() < unanswerable_share:
                questions.append((Fact(fact.name, missing, "", lexicon).question, None, -1))
                continue
            template = lexicon.relations[fact.relation].fact
            offset = len(template.split("{value}")[0].format(name=fact.name))
            start = context.index(fact.sentence) + offset
            questions.append((fact.question, fact.value, start))
        out.append((context, questions))
    return out
