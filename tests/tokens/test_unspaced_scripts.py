"""Thai, Lao, Khmer and Myanmar: no spaces between words, so words come from ICU's dictionaries
(the compiled scan and the regex tokeniser cut them alike: tests/tokens/test_tokenize.py).

Before, a run of letters between two spaces (often a whole clause) was one token: one edited word
changed the whole token and its shingles, and a light edit of a Thai article was not found.
The texts are from the Universal Declaration of Human Rights (articles 1-2 and 17-18, Thai).
"""

import pytest

from streamdedup.tokens.document import Document
from streamdedup.tokens.tokenize import split_words

ARTICLES_1_2 = (
    "มนุษย์ทั้งหลายเกิดมามีอิสระและเสมอภาคกันในเกียรติศักดิ์และสิทธิ ต่างมีเหตุผลและมโนธรรม "
    "และควรปฏิบัติต่อกันด้วยเจตนารมณ์แห่งภราดรภาพ\n\n"
    "ทุกคนย่อมมีสิทธิและอิสรภาพบรรดาที่กำหนดไว้ในปฏิญญานี้ โดยปราศจากความแตกต่างไม่ว่าชนิดใด ๆ "
    "ดังเช่น เชื้อชาติ ผิว เพศ ภาษา ศาสนา ความคิดเห็นทางการเมืองหรือทางอื่น เผ่าพันธุ์แห่งชาติ "
    "หรือสังคม ทรัพย์สิน กำเนิด หรือสถานะอื่น ๆ\n\n"
    "อนึ่งจะไม่มีความแตกต่างใด ๆ ตามมูลฐานแห่งสถานะทางการเมือง ทางการศาล "
    "หรือทางการระหว่างประเทศของประเทศหรือดินแดนที่บุคคลสังกัด ไม่ว่าดินแดนนี้จะเป็นเอกราช "
    "อยู่ในความพิทักษ์มิได้ปกครองตนเอง หรืออยู่ภายใต้การจำกัดอธิปไตยใด ๆ ทั้งสิ้น"
)
ARTICLES_17_18 = (
    "ทุกคนมีสิทธิที่จะเป็นเจ้าของทรัพย์สินโดยลำพังตนเอง เช่นเดียวกับโดยร่วมกับผู้อื่น\n\n"
    "บุคคลใด ๆ จะถูกริบทรัพย์สินโดยพลการไม่ได้\n\n"
    "ทุกคนมีสิทธิในอิสรภาพแห่งความคิดมโนธรรมและศาสนา สิทธินี้รวมถึงอิสรภาพในการเปลี่ยนศาสนา"
    "หรือความเชื่อถือ และอิสรภาพในการที่จะประกาศ ศาสนา หรือความเชื่อถือของตน โดยการสอน "
    "การปฏิบัติการสักการะบูชาและการประกอบพิธีกรรม ไม่ว่าจะโดยลำพังตนเองหรือในประชาคมร่วมกับผู้อื่น "
    "และเป็นการสาธารณะหรือส่วนบุคคล"
)


@pytest.mark.parametrize("text, words", [
    ("มนุษย์ทั้งหลายเกิดมามีอิสระ", ["มนุษย์", "ทั้ง", "หลาย", "เกิด", "มา", "มี", "อิสระ"]),  # Thai
    ("ສາທາລະນະລັດ ປະຊາທິປະໄຕ ປະຊາຊົນລາວ", ["ສາທາລະນະລັດ", "ປະຊາທິປະໄຕ", "ປະຊາຊົນ", "ລາວ"]),  # Lao
    ("ការទទួលស្គាល់សេចក្ដីថ្លៃថ្នូរ", ["ការ", "ទទួលស្គាល់", "សេចក្ដីថ្លៃថ្នូរ"]),  # Khmer
    ("မြန်မာနိုင်ငံသည်", ["မြန်မာနိုင်ငံ", "သည်"]),  # Myanmar
    ("ข้อ ๑ abc ไทย中文", ["ข้อ", "๑", "abc", "ไทย", "中", "文"]),  # Thai digits, Latin, Han beside
])
def test_runs_of_unspaced_scripts_are_cut_into_words(text, words):
    assert split_words(text) == words
    assert Document.from_text(text).tokens == words


def test_a_light_edit_of_a_thai_article_is_its_duplicate(tmp_path):
    from streamdedup.testing import run_records

    edited = ARTICLES_1_2.replace("ต่างมีเหตุผล", "ต่างก็มีเหตุผล").replace("ดังเช่น", "เช่น") \
                         .replace("ไม่ว่าดินแดนนี้", "ไม่ว่าดินแดนนั้น")
    assert edited != ARTICLES_1_2
    records = [{"url": f"https://{host}/{n}", "text": text, "fetched_at": f"2024-03-0{n}T10:00:00Z"}
               for n, (host, text) in enumerate([("a.example", ARTICLES_1_2), ("b.example", ARTICLES_17_18),
                                                 ("c.example", edited)], 1)]
    first, other, copy = run_records(records, tmp_path)
    assert (first.status, other.status) == ("unique", "unique")
    assert copy.status == "duplicate" and copy.dedup["duplicate_of"] == first.dedup["id"]


def test_the_compiled_test_of_unspaced_scripts_is_the_regex():
    """scan's `_any_in(cps, _UNSPACED)` finds a Thai, Lao, Myanmar or Khmer code point where UNSPACED_RE does."""
    import random

    from streamdedup.tokens.hashing import code_points
    from streamdedup.tokens.scan import _UNSPACED, _any_in
    from streamdedup.tokens.tokenize import UNSPACED_RANGES, UNSPACED_RE

    edges = [c for first, last in UNSPACED_RANGES for c in (first - 1, first, last, last + 1)]
    rng = random.Random(3)
    for _ in range(300):
        chars = [rng.choice(edges + [0x4E2D, 0x0416, 0x0F40, 0x1F600, 0xD800, 0x41]) for _ in range(rng.randrange(1, 4))]
        text = "".join(map(chr, chars))
        assert _any_in(code_points(text), _UNSPACED) == bool(UNSPACED_RE.search(text)), chars
