// What the oracle files share: nothing numeric, only a template helper.
#pragma once

#include <type_traits>

namespace ptk {
namespace reference {

// T in a non-deduced context: optional outputs (mean, rstd, ...) may be passed as nullptr while the
// element type is deduced from the other arguments.
template <class T>
using NonDeduced = typename std::enable_if<true, T>::type;

}  // namespace reference
}  // namespace ptk
