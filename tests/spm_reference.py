"""SentencePiece's ids of a file, and the text of those ids, by Debian's python3-sentencepiece (the reference
encoder, run in its own process). usage: spm_reference.py MODEL TEXT_FILE DECODED_OUT (ids on stdout, one line)"""
import sys

import sentencepiece

sp = sentencepiece.SentencePieceProcessor(model_file=sys.argv[1])
with open(sys.argv[2], encoding="utf-8", newline="") as f:
    ids = sp.encode(f.read())
print(" ".join(map(str, ids)))
with open(sys.argv[3], "w", encoding="utf-8", newline="") as f:
    f.write(sp.decode(ids))
