// The compiled parts of Asio and Beast, once for the whole program (the targets that include
// them build with BOOST_ASIO_SEPARATE_COMPILATION and BOOST_BEAST_SEPARATE_COMPILATION), so the
// files that use them compile in seconds instead of re-instantiating both libraries each.
#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
