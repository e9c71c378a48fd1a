# Script mode: writes OUT, a C++ file defining cardsim::embedded::SYMBOL as the text of IN.
file(READ ${IN} text)
file(WRITE ${OUT} "// Generated from ${IN}; do not edit.\n#include <string_view>\n"
     "namespace cardsim::embedded {\nextern const std::string_view ${SYMBOL};\n"
     "const std::string_view ${SYMBOL} = R\"cardsim_embed(${text})cardsim_embed\";\n}\n")
