#include "engine/program/epilogue.hpp"

namespace cardsim::program {

std::uint32_t epilogue_flags(graph::Epilogue e) {
    switch (e) {
    case graph::Epilogue::None:
        return 0;
    case graph::Epilogue::Accumulate:
        return flag::Accumulate;
    case graph::Epilogue::Gelu:
        return flag::EpilogueGelu;
    case graph::Epilogue::Relu:
        return flag::EpilogueRelu;
    }
    return 0;
}

graph::Epilogue epilogue_of(std::uint32_t flags) {
    return flags & flag::Accumulate     ? graph::Epilogue::Accumulate
           : flags & flag::EpilogueGelu ? graph::Epilogue::Gelu
           : flags & flag::EpilogueRelu ? graph::Epilogue::Relu
                                        : graph::Epilogue::None;
}

} // namespace cardsim::program
